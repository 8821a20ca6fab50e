package differ_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/policy"
)

// Distrust writes every touched name from the head whatever the registry
// read said: the same version again, an add, a delete; a name the plan
// already writes or skips is left as planned.
func TestDistrust_TouchedNamesWrittenFromHead(t *testing.T) {
	t.Parallel()
	desired := desiredOf(map[string]policy.Desired{
		"same": {PolicyName: "same", Path: "same.md", SHA: "s1"},
		"new":  {PolicyName: "new", Path: "new.md", SHA: "n1"},
		"edit": {PolicyName: "edit", Path: "edit.md", SHA: "e2"},
	})
	known := map[string]policy.Entry{
		"same": {PolicyName: "same", Path: "same.md", SHA: "s1"},
		"edit": {PolicyName: "edit", Path: "edit.md", SHA: "e1"},
		"gone": {PolicyName: "gone", Path: "gone.md", SHA: "g1"},
	}
	plan := differ.Plan(desired, known, map[string]bool{"edit": true, "same": true}, []policy.Skip{{PolicyName: "skip"}}, nil)
	touched := map[string]bool{"same": true, "new": true, "edit": true, "ghost": true, "gone": true, "skip": true}
	got := differ.Distrust(plan, desired, known, touched)
	want := []policy.Item{
		{Action: policy.ActUpdate, PolicyName: "edit", Path: "edit.md", SHA: "e2", Old: &policy.Old{Path: "edit.md", SHA: "e1"}},
		{Action: policy.ActAdd, PolicyName: "new", Path: "new.md", SHA: "n1"},
		{Action: policy.ActUpdate, PolicyName: "same", Path: "same.md", SHA: "s1", Old: &policy.Old{Path: "same.md", SHA: "s1"}},
		{Action: policy.ActDelete, PolicyName: "ghost"},
		{Action: policy.ActDelete, PolicyName: "gone", Old: &policy.Old{Path: "gone.md", SHA: "g1"}},
	}
	if diff := cmp.Diff(want, got.Items); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	if got.Unchanged != 0 {
		t.Errorf("unchanged = %d, want 0: the same version is written again", got.Unchanged)
	}
}

// A touched name the plan moves (the entry read has the same sha at
// another path) is announced: an update, not a move, which publishes
// without an announcement on the strength of an entry that may predate the
// name's delete (a soak: seed 44647 published a policy with no queue
// entry). A move of an untouched name stays a move.
func TestDistrust_TouchedMove_Announced(t *testing.T) {
	t.Parallel()
	desired := desiredOf(map[string]policy.Desired{
		"moved": {PolicyName: "moved", Path: "b/moved.md", SHA: "m1"},
		"calm":  {PolicyName: "calm", Path: "b/calm.md", SHA: "c1"},
	})
	known := map[string]policy.Entry{
		"moved": {PolicyName: "moved", Path: "a/moved.md", SHA: "m1"},
		"calm":  {PolicyName: "calm", Path: "a/calm.md", SHA: "c1"},
	}
	plan := differ.Plan(desired, known, nil, nil, nil)
	got := differ.Distrust(plan, desired, known, map[string]bool{"moved": true})
	actions := map[string]policy.Action{}
	for _, it := range got.Items {
		actions[it.PolicyName] = it.Action
	}
	if actions["moved"] != policy.ActUpdate || actions["calm"] != policy.ActMove {
		t.Errorf("actions %v, want moved an update (announced), calm still a move", actions)
	}
}

// RepairQueue removes the queue entries of policies that do not exist and
// rewrites those whose sha is not their policy's; planned and owed names
// are left alone. A skipped name with no policy is an orphan too.
func TestRepairQueue_OrphansRemovedStaleRewritten(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 25, 16, 0, 0, 0, time.UTC)
	entries := map[string]policy.Entry{"ok": {SHA: "o1"}, "stale": {SHA: "s2"}, "owed": {SHA: "w2"}}
	queued := []policy.Queued{{PolicyName: "ok", SHA: "o1"}, {PolicyName: "orphan", SHA: "x1"}, {PolicyName: "owed", SHA: "w1"}, {PolicyName: "planned", SHA: "p1"}, {PolicyName: "skip", SHA: "k1"}, {PolicyName: "stale", SHA: "s1"}}
	plan := policy.Plan{Items: []policy.Item{{Action: policy.ActAdd, PolicyName: "planned", SHA: "p2"}}, Skipped: []policy.Skip{{PolicyName: "skip"}}}
	pending := map[string]policy.QueueEntry{"owed": {PolicyName: "owed", SHA: "w1"}}
	got := differ.RepairQueue(plan, differ.QueueWork{}, entries, pending, queued, now)
	want := differ.QueueWork{
		Drop:    []string{"orphan", "skip"},
		Orphans: []string{"orphan", "skip"},
		Requeue: []policy.QueueEntry{{PolicyName: "stale", SHA: "s2", Operation: policy.OpUpdate, CreatedAt: "2026-11-25T16:00:00Z"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("work (-want +got):\n%s", diff)
	}
}
