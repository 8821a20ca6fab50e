package differ_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/policy"
)

func TestUnreached_AddsAndUpdatesNotReadLeaveThePlan_FailedAndMovesStay(t *testing.T) {
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
	if diff := cmp.Diff([]string{"b", "f"}, late); diff != "" {
		t.Errorf("late (-want +got):\n%s", diff)
	}
	var names []string
	for _, it := range got.Items {
		names = append(names, it.PolicyName)
	}
	if diff := cmp.Diff([]string{"a", "c", "d", "e"}, names); diff != "" {
		t.Errorf("plan left (-want +got):\n%s", diff)
	}
	if len(plan.Items) != 6 {
		t.Errorf("the plan given was changed: %d items", len(plan.Items))
	}
	if _, late := differ.Unreached(got, read, readErrs); late != nil {
		t.Errorf("every file reached: late %v, want none", late)
	}
}
