package syncer

import (
	"fmt"
	"hash/fnv"
	"slices"
	"testing"
	"unsafe"

	"github.com/knue/syncjob/internal/policy"
)

// compactInto keeps, of three windows' plans, the first MaxRunChanges
// changes of all of them (puts before deletes, by name), counts every
// other change, and holds no string of the windows' own.
func TestCompactInto_FirstChangesOfAllWindows_RestCounted_StringsOwn(t *testing.T) {
	t.Parallel()
	var all []policy.Item
	windows := make([]policy.Plan, 3)
	for i := range 250 {
		it := policy.Item{Action: policy.ActAdd, PolicyName: fmt.Sprintf("정책 %03d", (i*37)%250), Path: fmt.Sprintf("p/%d.md", i), SHA: fmt.Sprint(i)}
		switch {
		case i%50 == 7:
			it.Action, it.Old = policy.ActDelete, &policy.Old{Path: "old.md", SHA: "o"}
		case i%50 == 9:
			it.Action = policy.ActMigrate
		}
		all = append(all, it)
		windows[i%3].Items = append(windows[i%3].Items, it)
	}
	for w := range windows {
		windows[w].Unchanged = w
		windows[w].Skipped = []policy.Skip{{PolicyName: fmt.Sprint("skip ", w), Path: "s.md", Reason: "empty"}}
	}
	var acc *policy.Plan
	for _, p := range windows {
		acc = compactInto(acc, p)
	}
	whole := policy.Plan{Items: all, Unchanged: 0 + 1 + 2}
	if acc.Counts() != whole.Counts() || acc.Len() != len(all) || len(acc.Skipped) != 3 {
		t.Errorf("counts %+v, len %d, %d skipped; want %+v, %d, 3", acc.Counts(), acc.Len(), len(acc.Skipped), whole.Counts(), len(all))
	}
	var changes []policy.Item
	for _, it := range all {
		if it.Action != policy.ActMigrate {
			changes = append(changes, it)
		}
	}
	slices.SortFunc(changes, changeOrder)
	wantChanges, wantOmitted := whole.RunChanges()
	gotChanges, gotOmitted := acc.RunChanges()
	if len(acc.Items) != policy.MaxRunChanges || gotOmitted != wantOmitted || len(gotChanges) != len(wantChanges) {
		t.Fatalf("%d items held, %d changes omitted; want %d held, %d omitted", len(acc.Items), gotOmitted, policy.MaxRunChanges, wantOmitted)
	}
	for i, it := range acc.Items {
		if it.PolicyName != changes[i].PolicyName || it.Action != changes[i].Action {
			t.Fatalf("item %d: %s %s, want %s %s (the first changes by name, puts first)", i, it.Action, it.PolicyName, changes[i].Action, changes[i].PolicyName)
		}
		for _, src := range all {
			if unsafe.StringData(src.PolicyName) == unsafe.StringData(it.PolicyName) || unsafe.StringData(src.Path) == unsafe.StringData(it.Path) {
				t.Fatalf("item %s holds a window's own string", it.PolicyName)
			}
		}
	}
}

// nameHash and pathHash are hash/fnv's FNV-1a, without its allocations:
// the tests place names in windows with hash/fnv.
func TestHashes_AreFNV1a(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"", "a.md", "규정/학사/교원 인사 규정 19.md", "x/README.md", "\xff.md"} {
		h32, h64 := fnv.New32a(), fnv.New64a()
		_, _ = h32.Write([]byte(policy.NameOf(path)))
		_, _ = h64.Write([]byte(path))
		if nameHash(path) != h32.Sum32() || pathHash(path) != h64.Sum64() {
			t.Errorf("%q: %d, %d; want %d, %d", path, nameHash(path), pathHash(path), h32.Sum32(), h64.Sum64())
		}
	}
}
