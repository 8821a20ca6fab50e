package syncer

import (
	"context"
	"fmt"
	"time"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
)

// ErrBudget is returned when a run would spend more billable writes than
// the daily write budget leaves (exit code 4, like a safety guard).
var ErrBudget = fmt.Errorf("%w: daily write budget", differ.ErrRefused)

// fitBudget is the budget step: it fits the plan to the daily write budget.
// With the writes the day's earlier runs were billed for and the run's own
// fixed writes (differ.FixedWrites), it keeps the items that fit
// (differ.FitBudget) and says how many must wait for another day. A run whose fixed writes alone do not fit is refused
// (ErrBudget) before it writes.
func (r *run) fitBudget(ctx context.Context, plan policy.Plan, work differ.QueueWork) (policy.Plan, int, error) {
	if r.opt.DailyWriteBudget <= 0 || !r.Registry.Usage().Billing {
		return plan, 0, nil
	}
	fixed := differ.FixedWrites(work, r.opt.LeaseTTL > 0)
	spent, err := r.spentToday(ctx)
	if err != nil {
		return plan, 0, fmt.Errorf("write budget: %w", err)
	}
	left := r.opt.DailyWriteBudget - spent - fixed
	if left < 0 {
		return plan, 0, fmt.Errorf("%w: %d of the %d writes for %s are spent and this run needs %d to record itself; run again tomorrow (UTC) or raise DAILY_WRITE_BUDGET",
			ErrBudget, spent, r.opt.DailyWriteBudget, r.start.Format("2006-01-02"), fixed)
	}
	plan, waiting := differ.FitBudget(plan, left)
	r.log.Info("write budget", logkey.Spent, spent, logkey.Budget, r.opt.DailyWriteBudget, logkey.Waiting, waiting)
	return plan, waiting, nil
}

// spentToday adds up the billable writes of today's (UTC) runs, from the
// run history's listing (no values read).
func (r *run) spentToday(ctx context.Context) (int64, error) {
	y, m, d := r.start.Date()
	day := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	refs, err := r.Registry.RunIndex(ctx)
	if err != nil {
		return 0, err
	}
	var spent int64
	for _, ref := range refs {
		if ref.At.Before(day) {
			break // newest first: the rest are older
		}
		spent += ref.BillableWrites
	}
	return spent, nil
}
