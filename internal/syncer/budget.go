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
var ErrBudget = fmt.Errorf("%w: daily write budget", ErrRefused)

// metadataWrites are the writes that end every run: run history, lastRun, lastCommit.
const metadataWrites = 3

// checkBudget stops a run before it writes when its writes, added to those
// the day's earlier runs were billed for, would exceed the daily budget.
func (r *run) checkBudget(ctx context.Context, plan policy.Plan, work differ.QueueWork) error {
	if r.opt.DailyWriteBudget <= 0 {
		return nil
	}
	if !r.Registry.Usage().Billing {
		return nil
	}
	need := int64(len(work.Requeue) + metadataWrites)
	if r.opt.LeaseTTL > 0 {
		need += 2 // taking the lease, and releasing it with the record
	}
	for _, it := range plan.Items {
		switch {
		case it.Action == policy.ActAdd || it.Action == policy.ActUpdate:
			need += 2 // entry and queue entry
		case it.Action == policy.ActMove || (it.Action == policy.ActMigrate && it.Path != ""):
			need++
		}
	}
	spent, err := r.spentToday(ctx)
	if err != nil {
		return fmt.Errorf("registry: read run history for the write budget: %w", err)
	}
	if spent+need > r.opt.DailyWriteBudget {
		return fmt.Errorf("%w: this run needs %d writes, %d of the %d for %s are spent; run again tomorrow (UTC) or raise DAILY_WRITE_BUDGET",
			ErrBudget, need, spent, r.opt.DailyWriteBudget, r.start.Format("2006-01-02"))
	}
	r.log.Info("write budget", logkey.Need, need, logkey.Spent, spent, logkey.Budget, r.opt.DailyWriteBudget)
	return nil
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
