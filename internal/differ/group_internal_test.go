package differ

import (
	"reflect"
	"testing"

	"github.com/knue/syncjob/internal/policy"
)

// TestResolve_DesiredIsTheGroupingMap: the desired map is the map that
// grouped the files by name, resolved in place (a conflict's winner, a
// skip removed), not a second map of every policy beside it (200,000
// policies: 16 MB of planning's peak, docs/bench.md).
func TestResolve_DesiredIsTheGroupingMap(t *testing.T) {
	t.Parallel()
	sha := func(c string) string { return c + "000000000000000000000000000000000000000"[:39] }
	files := []policy.File{
		{Path: "b/x.md", SHA: sha("1"), Size: 10},
		{Path: "a/x.md", SHA: sha("2"), Size: 10}, // wins over b/x.md: first by path
		{Path: "a/empty.md", SHA: sha("3"), Size: 0},
		{Path: "a/y.md", SHA: sha("4"), Size: 5},
	}
	g := groupByName(files, nil)
	desired, skipped, conflicts := resolve(g, Options{})
	if reflect.ValueOf(desired).UnsafePointer() != reflect.ValueOf(g.first).UnsafePointer() {
		t.Error("resolve made a second map of every policy")
	}
	want := map[string]policy.Desired{
		"x": {PolicyName: "x", Path: "a/x.md", SHA: sha("2"), Size: 10},
		"y": {PolicyName: "y", Path: "a/y.md", SHA: sha("4"), Size: 5},
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
