package differ_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/policy"
)

// Adds and updates the read did not reach leave the plan, and the deletes
// with them (a delete's content may live on under an unreached add's name:
// a rename); failed reads and moves stay, the failed read as a failure.
// When every file was reached, deletes stay too.
func TestTitling_LeaveUnreached_AddsAndUpdatesNotRead_DeletesWaitWithThem_FailedAndMovesStay(t *testing.T) {
	t.Parallel()
	plan := policy.Plan{Items: []policy.Item{
		{PolicyName: "a", Path: "a.md", Action: policy.ActAdd},
		{PolicyName: "b", Path: "b.md", Action: policy.ActUpdate},
		{PolicyName: "c", Path: "c.md", Action: policy.ActAdd},
		{PolicyName: "d", Path: "x/d.md", Action: policy.ActMove},
		{PolicyName: "e", Action: policy.ActDelete},
		{PolicyName: "f", Path: "f.md", Action: policy.ActAdd},
	}}
	readErrs := map[string]error{"c.md": errors.New("502")}
	ti := differ.NewTitling(plan, differ.Options{})
	ti.Put("a.md", policy.Content{Title: "A", Size: 3})
	late := ti.LeaveUnreached(readErrs)
	if diff := cmp.Diff([]string{"b", "e", "f"}, late); diff != "" {
		t.Errorf("late (-want +got):\n%s", diff)
	}
	if len(plan.Items) != 6 || plan.Items[4].PolicyName != "e" {
		t.Errorf("LeaveUnreached changed the plan's items: %d items", len(plan.Items))
	}
	got, failures, _ := ti.Done(plan, readErrs, nil)
	var names []string
	for _, it := range got.Items {
		names = append(names, it.PolicyName)
	}
	if diff := cmp.Diff([]string{"a", "d"}, names); diff != "" {
		t.Errorf("plan left (-want +got):\n%s", diff)
	}
	if len(failures) != 1 || failures[0].PolicyName != "c" {
		t.Errorf("failures %v, want c's failed read alone (not the unreached)", failures)
	}

	reached := policy.Plan{Items: []policy.Item{
		{PolicyName: "a", Path: "a.md", Action: policy.ActAdd},
		{PolicyName: "e", Action: policy.ActDelete},
	}}
	ti = differ.NewTitling(reached, differ.Options{})
	ti.Put("a.md", policy.Content{Title: "A", Size: 3})
	if late := ti.LeaveUnreached(nil); late != nil {
		t.Errorf("every file reached: late %v, want none", late)
	}
	if kept, _, _ := ti.Done(reached, nil, nil); len(kept.Items) != 2 {
		t.Errorf("every file reached, a delete planned: %d items, want the add and the delete", len(kept.Items))
	}
}
