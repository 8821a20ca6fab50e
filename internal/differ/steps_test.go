package differ_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/queue"
)

func modified(path string, n int) policy.Changeset {
	return policy.Changeset{Base: "b", Head: "h", Changes: []policy.Change{{Status: policy.Modified, Path: path, SHA: sha(n)}}}
}

func TestReadScope_IncrementalReadsTouchedRetriedAndHeld(t *testing.T) {
	t.Parallel()
	cs := modified("a/가.md", 2)
	last := &policy.RunSummary{Pending: []string{}, HeldBack: []policy.Skip{{PolicyName: "죽은"}}}
	b := differ.Before{Last: last, Revisit: []string{"재시도"}}
	names, held := differ.ReadScope(b, &cs)
	if diff := cmp.Diff([]string{"가", "재시도", "죽은"}, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"죽은"}, held); diff != "" {
		t.Errorf("held (-want +got):\n%s", diff)
	}
}

func TestReadScope_EverythingWhenFullUnrecordedOrUnclean(t *testing.T) {
	t.Parallel()
	cs := modified("a/가.md", 2)
	recorded := &policy.RunSummary{Pending: []string{}}
	for name, tc := range map[string]struct {
		b  differ.Before
		cs *policy.Changeset
	}{
		"full run":         {differ.Before{Last: recorded}, nil},
		"no last run":      {differ.Before{}, &cs},
		"older syncjob":    {differ.Before{Last: &policy.RunSummary{}}, &cs},
		"unclean last run": {differ.Before{Last: recorded, Unclean: "killed"}, &cs},
	} {
		if names, held := differ.ReadScope(tc.b, tc.cs); names != nil || held != nil {
			t.Errorf("%s: names %v, held %v; want nil (read everything)", name, names, held)
		}
	}
}

func TestTreeNeeded(t *testing.T) {
	t.Parallel()
	edit := modified("a/가.md", 2)
	removed := policy.Changeset{Changes: []policy.Change{{Status: policy.Removed, Path: "a/가.md"}}}
	skippedBefore := &policy.RunSummary{Skipped: []policy.Skip{{PolicyName: "가", Path: "a/가.md"}}}
	for _, tc := range []struct {
		name string
		b    differ.Before
		cs   policy.Changeset
		dead []string
		want bool
	}{
		{"an edit in place", differ.Before{}, edit, nil, false},
		{"a removal", differ.Before{}, removed, nil, true},
		{"a retry", differ.Before{Revisit: []string{"나"}}, edit, nil, true},
		{"a dead letter", differ.Before{}, edit, []string{"나"}, true},
		{"a name skipped before", differ.Before{Last: skippedBefore}, edit, nil, true},
	} {
		if got := differ.TreeNeeded(tc.b, tc.cs, tc.dead); got != tc.want {
			t.Errorf("%s: TreeNeeded = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPlanIncremental_WithTreeDecidesRetriesAndDeletes(t *testing.T) {
	t.Parallel()
	cs := modified("a/가.md", 2)
	reg := registry(known("a/가.md", 1), known("a/나.md", 1), known("a/다.md", 1))
	tree := []policy.File{file("a/가.md", 2), file("a/다.md", 1)}
	// 나 is retried and gone from the tree: deleted; 다 is untouched: unchanged
	_, plan := differ.PlanIncremental(differ.Before{Revisit: []string{"나"}}, cs, reg, nil, tree, differ.Options{})
	var got []string
	for _, it := range plan.Items {
		got = append(got, it.Action.String()+" "+it.PolicyName)
	}
	want := []string{policy.ActUpdate.String() + " 가", policy.ActDelete.String() + " 나"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	// without the tree, only what the changeset touches is planned
	_, plan = differ.PlanIncremental(differ.Before{}, cs, reg, nil, nil, differ.Options{})
	if len(plan.Items) != 1 || plan.Items[0].PolicyName != "가" {
		t.Errorf("changeset only: items %+v, want the update of 가", plan.Items)
	}
}

func TestPlanFull_DeletesWhatTheTreeLacks(t *testing.T) {
	t.Parallel()
	desired, plan := differ.PlanFull([]policy.File{file("a/가.md", 1)}, registry(known("a/가.md", 1), known("a/나.md", 1)), differ.Options{})
	if len(desired) != 1 || len(plan.Items) != 1 || plan.Items[0].Action != policy.ActDelete || plan.Items[0].PolicyName != "나" || plan.Unchanged != 1 {
		t.Errorf("desired %v, plan %+v; want 가 unchanged, 나 deleted", desired, plan)
	}
}

func TestFitBudget_KeepsWhatFitsInOrder(t *testing.T) {
	t.Parallel()
	plan := policy.Plan{Items: []policy.Item{
		{Action: policy.ActAdd, PolicyName: "a"},     // 2
		{Action: policy.ActUpdate, PolicyName: "b"},  // 2: does not fit after a
		{Action: policy.ActMove, PolicyName: "c"},    // 1: fits
		{Action: policy.ActDelete, PolicyName: "d"},  // 0: billed apart
		{Action: policy.ActMigrate, PolicyName: "e"}, // no path: a removal, 0
	}}
	got, waiting := differ.FitBudget(plan, 3)
	var names []string
	for _, it := range got.Items {
		names = append(names, it.PolicyName)
	}
	if diff := cmp.Diff([]string{"a", "c", "d", "e"}, names); diff != "" || waiting != 1 {
		t.Errorf("kept (-want +got):\n%s\nwaiting %d, want 1", diff, waiting)
	}
	if len(plan.Items) != 5 {
		t.Error("FitBudget changed the plan it was given")
	}
	if got := differ.FixedWrites(differ.QueueWork{Requeue: make([]policy.QueueEntry, 2)}, true); got != 2+differ.MetadataWrites+2 {
		t.Errorf("FixedWrites = %d, want requeues, metadata and the lease", got)
	}
}

func TestRecordFailures_OwedThenDead(t *testing.T) {
	t.Parallel()
	plan := policy.Plan{Items: []policy.Item{
		{Action: policy.ActUpdate, PolicyName: "가", Path: "a/가.md", SHA: sha(2)},
		{Action: policy.ActDelete, PolicyName: "나", Old: &policy.Old{Path: "a/나.md", SHA: sha(3)}},
		{Action: policy.ActMove, PolicyName: "다", Path: "b/다.md", SHA: sha(4)},
	}}
	msg := "boom"
	pending := map[string]policy.QueueEntry{
		// 나's delete failed twice before: this is its last
		"나": {PolicyName: "나", SHA: sha(3), Operation: policy.OpDelete, RetryCount: 2, ErrorMessage: &msg},
	}
	failures := []policy.Failure{{PolicyName: "가", Error: "e1"}, {PolicyName: "나", Error: "e2"}, {PolicyName: "다", Error: "e3"}, {PolicyName: "라", Error: "unread"}}
	rec := differ.RecordFailures(plan, failures, pending, "", now)
	if diff := cmp.Diff([]string{"가", "다", "라"}, rec.Owed); diff != "" {
		t.Errorf("owed (-want +got):\n%s", diff)
	}
	if len(rec.Retries) != 2 {
		t.Fatalf("retries = %+v, want 가 and 나 (a move and an unread file have no queue entry)", rec.Retries)
	}
	if r := rec.Retries[0]; r.Dead != nil || r.Entry.RetryCount != 1 || r.Entry.Operation != policy.OpUpdate || *r.Entry.ErrorMessage != "e1" {
		t.Errorf("가: %+v, want queued with one failure", r)
	}
	if r := rec.Retries[1]; r.Dead == nil || r.Dead.RetryCount != queue.MaxFailures || r.Dead.Reason != "e2" {
		t.Errorf("나: %+v, want a dead letter at the last failure", r)
	}
	want := []policy.Skip{{PolicyName: "나", Path: "a/나.md", Reason: queue.HeldBackReason("나")}}
	if diff := cmp.Diff(want, rec.HeldBack); diff != "" {
		t.Errorf("held back (-want +got):\n%s", diff)
	}
	// the same attempt (a Lambda retry) failing again does not count twice
	again := differ.RecordFailures(plan, failures[:1], map[string]policy.QueueEntry{"가": rec.Retries[0].Entry}, "", now)
	if again.Retries[0].Entry.RetryCount != 2 {
		t.Errorf("a second failure without an attempt id counts on: %+v", again.Retries[0].Entry)
	}
	first := differ.RecordFailures(plan, failures[:1], nil, "req-1", now).Retries[0].Entry
	same := differ.RecordFailures(plan, failures[:1], map[string]policy.QueueEntry{"가": first}, "req-1", now).Retries[0].Entry
	if same.RetryCount != first.RetryCount {
		t.Errorf("one attempt counted twice: %d then %d", first.RetryCount, same.RetryCount)
	}
}

func TestLegacyLeft(t *testing.T) {
	t.Parallel()
	mig := differ.Migration{Unmatched: []string{"옛 학칙"}}
	if diff := cmp.Diff([]string{"옛 학칙"}, differ.LegacyLeft(false, []string{"ignored"}, nil, mig)); diff != "" {
		t.Errorf("full read (-want +got):\n%s", diff)
	}
	v1 := map[string]policy.Entry{"옛 학칙": {}, "맞춘 것": {}}
	got := differ.LegacyLeft(true, []string{"옛 학칙", "맞춘 것", "안 읽은 것"}, v1, mig)
	if diff := cmp.Diff([]string{"옛 학칙", "안 읽은 것"}, got); diff != "" {
		t.Errorf("partial read (-want +got):\n%s", diff)
	}
}
