package differ_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/policy"
)

// A full run keeps only the queue entries QueueCurrent does not report: the
// repair is the same without the others, and they are the usual case.
func TestRepairQueue_SameWithoutTheCurrentEntries(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 16, 0, 0, 0, time.UTC)
	entries := map[string]policy.Entry{"ok": {SHA: "o1"}, "ok2": {SHA: "o2"}, "stale": {SHA: "s2"}, "planned": {SHA: "p1"}}
	queued := []policy.Queued{{PolicyName: "ok", SHA: "o1"}, {PolicyName: "ok2", SHA: "o2"}, {PolicyName: "orphan", SHA: "x1"}, {PolicyName: "planned", SHA: "p0"}, {PolicyName: "stale", SHA: "s1"}}
	plan := policy.Plan{Items: []policy.Item{{Action: policy.ActUpdate, PolicyName: "planned", SHA: "p2"}}}
	kept := slices.DeleteFunc(slices.Clone(queued), func(q policy.Queued) bool { return differ.QueueCurrent(entries, q) })
	want := []policy.Queued{{PolicyName: "orphan", SHA: "x1"}, {PolicyName: "planned", SHA: "p0"}, {PolicyName: "stale", SHA: "s1"}}
	if diff := cmp.Diff(want, kept); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	all := differ.RepairQueue(plan, differ.QueueWork{}, entries, nil, queued, now)
	if diff := cmp.Diff(all, differ.RepairQueue(plan, differ.QueueWork{}, entries, nil, kept, now)); diff != "" {
		t.Errorf("repair without the current entries (-all +kept):\n%s", diff)
	}
	if len(all.Drop) != 1 || len(all.Requeue) != 1 {
		t.Errorf("repair = %+v; want the orphan dropped and the stale entry requeued", all)
	}
}

// A skip keeps the policy the registry holds, and its queue entry with it
// (whatever version it announces); only a skipped name with no policy has
// its entry removed.
func TestRepairQueue_SkippedNameLeftAloneOnlyWithAPolicy(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 16, 0, 0, 0, time.UTC)
	entries := map[string]policy.Entry{"kept": {SHA: "k1"}}
	queued := []policy.Queued{{PolicyName: "kept", SHA: "k2"}, {PolicyName: "never", SHA: "n1"}}
	plan := policy.Plan{Skipped: []policy.Skip{{PolicyName: "kept"}, {PolicyName: "never"}}}
	got := differ.RepairQueue(plan, differ.QueueWork{}, entries, nil, queued, now)
	want := differ.QueueWork{Drop: []string{"never"}, Orphans: []string{"never"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("work (-want +got):\n%s", diff)
	}
}
