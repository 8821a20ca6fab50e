package differ_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/policy"
)

func TestGuardWithin_LimitAndPinnedCount(t *testing.T) {
	t.Parallel()
	reg := map[string]policy.Entry{}
	var deletes []policy.Item
	for i := 0; i < 100; i++ {
		name := string(rune('가' + i))
		reg[name] = entry(name, i)
		deletes = append(deletes, policy.Item{Action: policy.ActDelete, PolicyName: name, Old: &policy.Old{SHA: sha(i)}})
	}
	plan := policy.Plan{Items: deletes[:30]} // 30 of 100 lost
	for _, tc := range []struct {
		lim   differ.Limit
		allow int
		want  string // "" passes
	}{
		{differ.DefaultLimit, 0, "loses 30 of 100 policies (more than MAX_DELETE=10 and MAX_DELETE_PERCENT=20%); run with --allow-mass-delete=30"},
		{differ.Limit{Count: 30, Percent: 0}, 0, ""},
		{differ.Limit{Count: 0, Percent: 30}, 0, ""},
		{differ.Limit{Count: 29, Percent: 29}, 0, "loses 30 of 100"},
		{differ.Limit{Count: 0, Percent: 0}, differ.AllowAny, ""},
		{differ.DefaultLimit, 30, ""},
		{differ.DefaultLimit, 31, "the plan deletes 30 policies, not the 31 that --allow-mass-delete=31 lets through"},
		{differ.Limit{Count: 100, Percent: 100}, 29, "the plan deletes 30 policies, not the 29"}, // pinned: a plan that differs is refused, even under the limit
	} {
		err := differ.GuardWithin(plan, reg, nil, 0, tc.lim, tc.allow)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v allow %d: %v, want it let through", tc.lim, tc.allow, err)
		case tc.want != "" && (!errors.Is(err, differ.ErrRefused) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v allow %d: %v, want refused saying %q", tc.lim, tc.allow, err, tc.want)
		}
	}
}
