package differ

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/knue/syncjob/internal/policy"
)

// TestResolve_DesiredIsTheCandidatesArray: the desired policies are the
// candidates' own array, resolved in place (a conflict's winner, a skip
// removed), not a second list (nor a map) of every policy beside it
// (200,000 policies: 11 MB, as a map 20 MB, of planning's peak;
// docs/bench.md, "How we got here", "Memory, sixth pass").
func TestResolve_DesiredIsTheCandidatesArray(t *testing.T) {
	t.Parallel()
	sha := func(c string) string { return c + "000000000000000000000000000000000000000"[:39] }
	files := []policy.File{
		{Path: "b/x.md", SHA: sha("1"), Size: 10},
		{Path: "a/x.md", SHA: sha("2"), Size: 10}, // wins over b/x.md: first by path
		{Path: "a/empty.md", SHA: sha("3"), Size: 0},
		{Path: "a/y.md", SHA: sha("4"), Size: 5},
	}
	cands := candidates(files, nil)
	desired, skipped, conflicts := resolve(cands, Options{})
	if unsafe.SliceData(desired) != unsafe.SliceData(cands) {
		t.Error("resolve made a second list of every policy")
	}
	want := Desired{
		{PolicyName: "x", Path: "a/x.md", SHA: sha("2"), Size: 10},
		{PolicyName: "y", Path: "a/y.md", SHA: sha("4"), Size: 5},
	}
	if !reflect.DeepEqual(desired, want) {
		t.Errorf("desired %v, want %v", desired, want)
	}
	if len(skipped) != 1 || skipped[0].PolicyName != "empty" || len(conflicts) != 1 || conflicts[0].Winner != "a/x.md" {
		t.Errorf("skipped %v, conflicts %v: want empty skipped, x won by a/x.md", skipped, conflicts)
	}
}

// TestPlannedOf_OnlyThePendingNames: settling the queue asks of the plan
// only which pending names it plans: the map holds those, not every
// planned name (a first sync of 200,000 policies, none pending, made one
// of 200,000 names).
func TestPlannedOf_OnlyThePendingNames(t *testing.T) {
	t.Parallel()
	items := make([]policy.Item, 0, 1000)
	for i := range 1000 {
		items = append(items, policy.Item{Action: policy.ActAdd, PolicyName: "p" + string(rune('가'+i))})
	}
	if got := plannedOf(items, nil); len(got) != 0 {
		t.Errorf("nothing pending: %d names, want none", len(got))
	}
	pending := map[string]policy.QueueEntry{items[7].PolicyName: {}, "gone": {}}
	got := plannedOf(items, pending)
	if !reflect.DeepEqual(got, map[string]bool{items[7].PolicyName: true}) {
		t.Errorf("planned = %v, want only %q (pending and planned)", got, items[7].PolicyName)
	}
}

// TestDesired_SortedByName_FoundByName: NewDesired sorts by name and keeps
// the first of a name given twice; Get finds a name by binary search and
// misses one the head does not want.
func TestDesired_SortedByName_FoundByName(t *testing.T) {
	t.Parallel()
	d := NewDesired(
		policy.Desired{PolicyName: "나", Path: "나.md"},
		policy.Desired{PolicyName: "a", Path: "a.md"},
		policy.Desired{PolicyName: "B", Path: "B.md"},
		policy.Desired{PolicyName: "a", Path: "x/a.md"},
	)
	var names []string
	for _, p := range d {
		names = append(names, p.PolicyName)
	}
	if !reflect.DeepEqual(names, []string{"B", "a", "나"}) {
		t.Errorf("names %q, want sorted bytewise, each once", names)
	}
	if got, ok := d.Get("a"); !ok || got.Path != "a.md" {
		t.Errorf("Get(a) = %+v, %t; want a.md, the first given", got, ok)
	}
	if got, ok := d.Get("b"); ok {
		t.Errorf("Get(b) = %+v: want none", got)
	}
}
