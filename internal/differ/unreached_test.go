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
// a rename); failed reads and moves stay. When every file was reached,
// deletes stay too.
func TestUnreached_AddsAndUpdatesNotReadLeaveThePlan_DeletesWaitWithThem_FailedAndMovesStay(t *testing.T) {
	t.Parallel()
	plan := policy.Plan{Items: []policy.Item{
		{PolicyName: "a", Path: "a.md", Action: policy.ActAdd},
		{PolicyName: "b", Path: "b.md", Action: policy.ActUpdate},
		{PolicyName: "c", Path: "c.md", Action: policy.ActAdd},
		{PolicyName: "d", Path: "x/d.md", Action: policy.ActMove},
		{PolicyName: "e", Action: policy.ActDelete},
		{PolicyName: "f", Path: "f.md", Action: policy.ActAdd},
	}}
	read := map[string]policy.Content{"a.md": {Title: "A", Size: 3}}
	readErrs := map[string]error{"c.md": errors.New("502")}
	got, late := differ.Unreached(plan, read, readErrs)
	if diff := cmp.Diff([]string{"b", "e", "f"}, late); diff != "" {
		t.Errorf("late (-want +got):\n%s", diff)
	}
	var names []string
	for _, it := range got.Items {
		names = append(names, it.PolicyName)
	}
	if diff := cmp.Diff([]string{"a", "c", "d"}, names); diff != "" {
		t.Errorf("plan left (-want +got):\n%s", diff)
	}
	if len(plan.Items) != 6 {
		t.Errorf("the plan given was changed: %d items", len(plan.Items))
	}
	if _, late := differ.Unreached(got, read, readErrs); late != nil {
		t.Errorf("every file reached: late %v, want none", late)
	}
	reached := policy.Plan{Items: []policy.Item{plan.Items[0], plan.Items[4]}}
	if kept, late := differ.Unreached(reached, read, readErrs); late != nil || len(kept.Items) != 2 {
		t.Errorf("every file reached, a delete planned: late %v, %d items; want none late, the delete kept", late, len(kept.Items))
	}
}
