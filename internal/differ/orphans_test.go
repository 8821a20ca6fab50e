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

// A skip keeps the policy the registry holds: its queue entry may announce
// only that version (an announcement of the skipped one, left by a run
// killed between announce and publish, stayed for good: an adversarial
// helper), and a skipped name with no policy has its entry removed. (This
// test kept any entry of a skipped name with a policy, whatever it
// announced, until the helper's finding.)
func TestRepairQueue_SkippedName_EntryAnnouncesTheRegistrysVersion(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 16, 0, 0, 0, time.UTC)
	entries := map[string]policy.Entry{"kept": {SHA: "k1"}, "current": {SHA: "c1"}}
	queued := []policy.Queued{{PolicyName: "current", SHA: "c1"}, {PolicyName: "kept", SHA: "k2"}, {PolicyName: "never", SHA: "n1"}}
	plan := policy.Plan{Skipped: []policy.Skip{{PolicyName: "current"}, {PolicyName: "kept"}, {PolicyName: "never"}}}
	got := differ.RepairQueue(plan, differ.QueueWork{}, entries, nil, queued, now)
	want := differ.QueueWork{
		Requeue: []policy.QueueEntry{{PolicyName: "kept", SHA: "k1", Operation: policy.OpUpdate, CreatedAt: "2026-11-27T16:00:00Z"}},
		Drop:    []string{"never"}, Orphans: []string{"never"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("work (-want +got):\n%s", diff)
	}
}

// A held-back name's queue entry may announce only the version the
// registry holds: a fresh announcement of the held-back version (a run
// killed after the dead letter landed, or the entry's removal failing)
// and a failure record beside the dead letter (which counted on after a
// drop) are rewritten for the registry's version, or removed when no
// policy holds one; owed or not (an adversarial helper).
func TestRepairQueue_HeldBackName_EntryAnnouncesOnlyTheRegistrysVersion(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 16, 0, 0, 0, time.UTC)
	msg := "boom"
	entries := map[string]policy.Entry{"announced": {SHA: "a1"}, "failed": {SHA: "f1"}, "current": {SHA: "c1"}}
	queued := []policy.Queued{{PolicyName: "announced", SHA: "a2"}, {PolicyName: "current", SHA: "c1"}, {PolicyName: "failed", SHA: "f2"}, {PolicyName: "new", SHA: "n1"}}
	pending := map[string]policy.QueueEntry{"failed": {PolicyName: "failed", SHA: "f2", RetryCount: 2, ErrorMessage: &msg}}
	plan := policy.Plan{HeldBack: []policy.Skip{{PolicyName: "announced"}, {PolicyName: "current"}, {PolicyName: "failed"}, {PolicyName: "new"}}}
	got := differ.RepairQueue(plan, differ.QueueWork{}, entries, pending, queued, now)
	at := "2026-11-27T16:00:00Z"
	want := differ.QueueWork{
		Requeue: []policy.QueueEntry{
			{PolicyName: "announced", SHA: "a1", Operation: policy.OpUpdate, CreatedAt: at},
			{PolicyName: "failed", SHA: "f1", Operation: policy.OpUpdate, CreatedAt: at},
		},
		Drop: []string{"new"}, Orphans: []string{"new"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("work (-want +got):\n%s", diff)
	}
}
