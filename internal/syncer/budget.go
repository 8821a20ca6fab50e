package syncer

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// ErrBudget is returned when a run would spend more billable writes than
// the daily write budget leaves (exit code 4, like a safety guard).
var ErrBudget = differ.RefusedBy("daily write budget")

// The day's count of billable writes is the run history's: each run's key
// carries what it was billed for. A budgeted run writes its key before it
// may spend — with the lease it takes (its lease, record and release), and
// again once its plan is fitted (everything it may still write,
// differ.Reserve) — so a run killed before it records its end is counted
// all the same, at most what it may have written. Its record replaces the
// reservation with what it wrote.

// budgeted says whether the run counts its writes against a daily write
// budget: one is set and the backend bills per write.
func (r *run) budgeted() bool {
	return r.opt.DailyWriteBudget > 0 && r.Registry.Usage().Billing
}

// leaseBudget is the budget's part of taking the lease: the reservation
// written with the lease, or ErrBudget when the day's budget cannot pay for
// the run's lease, reservations and record — then the run writes nothing.
func (r *run) leaseBudget(ctx context.Context, st state, mode string) ([]registry.Write, error) {
	if !r.budgeted() {
		return nil, nil
	}
	spent, err := r.spentToday(ctx)
	if err != nil {
		return nil, fmt.Errorf("write budget: %w", err)
	}
	need := differ.FixedWrites(differ.QueueWork{}, true) + differ.ReserveWrites(true)
	if spent+need > r.opt.DailyWriteBudget {
		return nil, fmt.Errorf("%w: %d of the %d writes for %s are spent and this run needs %d to record itself; nothing written; run again tomorrow (UTC) or raise DAILY_WRITE_BUDGET",
			ErrBudget, spent, r.opt.DailyWriteBudget, r.start.Format("2006-01-02"), need)
	}
	// the lease, the second reservation, the record and the release
	after := 1 + 1 + differ.RecordWrites
	return []registry.Write{r.reservation(ctx, st, mode, int64(after))}, nil
}

// fitBudget is the budget step: it fits the plan to the daily write budget.
// With the writes the day's earlier runs were billed for and the run's own
// fixed writes (differ.FixedWrites, differ.ReserveWrites), it keeps the
// items that fit (differ.FitBudget), then the content mirror's repairs
// whose entries fit after them (mirrorRun.fitRepairs), and says how many
// must wait for another day; then it records what the run may still write
// (differ.Reserve, with a failure record for each of unread, and the
// repairs' entries) before the run applies. A run whose fixed writes alone
// do not fit is refused (ErrBudget) before it applies. own is what the
// run wrote in the windows before this one (windows.go), 0 for the first.
func (r *run) fitBudget(ctx context.Context, st state, mode string, plan policy.Plan, work differ.QueueWork, unread int, m *mirrorRun, own int64) (policy.Plan, int, error) {
	if !r.budgeted() {
		return plan, 0, nil
	}
	left, spent, fixed, err := r.budgetLeft(ctx, work, own)
	if err != nil {
		return plan, 0, err
	}
	if left <= 0 && own > 0 { // a later window of a first sync: what earlier ones wrote spent it
		if unread == 0 && len(work.Requeue) == 0 { // it writes nothing: no reservation
			fitted, waiting := differ.FitBudget(plan, 0)
			return fitted, waiting, nil
		}
		left = 0 // its failure records are reserved
	}
	if left < 0 {
		return plan, 0, fmt.Errorf("%w: %d of the %d writes for %s are spent and this run needs %d to record itself; run again tomorrow (UTC) or raise DAILY_WRITE_BUDGET",
			ErrBudget, spent, r.opt.DailyWriteBudget, r.start.Format("2006-01-02"), fixed)
	}
	plan, waiting := differ.FitBudget(plan, left)
	repairs, cut := m.fitRepairs(left - differ.Writes(plan))
	waiting += cut
	r.log.Info("write budget", logkey.Spent, spent, logkey.Budget, r.opt.DailyWriteBudget, logkey.Waiting, waiting)
	res := r.reservation(ctx, st, mode, differ.Reserve(plan, work, unread)+int64(repairs))
	if failed := r.Registry.Write(ctx, res); failed != nil {
		return plan, waiting, fmt.Errorf("write budget: reserve writes: %w", failed[res.Key()])
	}
	return plan, waiting, nil
}

// budgetSpent says whether a first sync's next window could write no
// policy within the daily write budget, the windows before it having
// written own (windows.go): then it is not listed nor read.
func (r *run) budgetSpent(ctx context.Context, own int64) (bool, error) {
	if !r.budgeted() {
		return false, nil
	}
	left, _, _, err := r.budgetLeft(ctx, differ.QueueWork{}, own)
	return err == nil && left < differ.Writes(policy.Plan{Items: []policy.Item{{Action: policy.ActAdd}}}), err
}

// budgetLeft is what the daily write budget leaves for a plan's items:
// the budget less the day's earlier runs (spent), the run's own fixed
// writes for work (fixed: its lease, reservations, record and release)
// and what it wrote in a first sync's earlier windows (own).
func (r *run) budgetLeft(ctx context.Context, work differ.QueueWork, own int64) (left, spent, fixed int64, err error) {
	leased := r.opt.LeaseTTL > 0
	fixed = differ.FixedWrites(work, leased) + differ.ReserveWrites(leased)
	if spent, err = r.spentToday(ctx); err != nil {
		return 0, 0, fixed, fmt.Errorf("write budget: %w", err)
	}
	return r.opt.DailyWriteBudget - spent - fixed - own, spent, fixed, nil
}

// unfinished is what a reservation says of its run until the run's record
// replaces it; a reservation left as is is a run that was killed.
const unfinished = "unfinished: stopped before it recorded its end (killed?); its writes are counted against DAILY_WRITE_BUDGET as at most what it may have made"

// reservation is the run's history key written before it ends (see
// registry.RunReservation): a failed run that may have written, billed for
// what it wrote so far, the reservation itself, after, and the lease
// renewals it may still make.
func (r *run) reservation(ctx context.Context, st state, mode string, after int64) registry.Write {
	sum := policy.RunSummary{
		Timestamp: r.start.Format(policy.TimeLayout), RunID: r.id, LeaseOwner: r.owner(), Repo: r.Repo, Branch: r.Branch,
		Trigger: r.opt.Trigger, Delivery: r.opt.Delivery, Mode: mode,
		CommitSHA: st.head, PreviousCommitSHA: st.last,
		Status: policy.RunFailed, Error: unfinished, Dirty: true,
		Skipped: []policy.Skip{}, Conflicts: []policy.Conflict{}, Requests: map[string]int64{}, Pending: []string{},
	}
	sum.BillableWrites = r.Registry.Usage().Writes - r.baseUsage.Writes + 1 + after + r.renewalsLeft(ctx)
	return registry.RunReservation(sum, r.start)
}

// maxRunTime bounds a run without a deadline when counting the lease
// renewals it may make: Lambda's longest run.
const maxRunTime = 15 * time.Minute

// renewalsLeft is how many lease renewals (one each third of the TTL) the
// run may still make before its deadline.
func (r *run) renewalsLeft(ctx context.Context) int64 {
	if r.opt.LeaseTTL <= 0 {
		return 0
	}
	left := maxRunTime
	if dl, ok := ctx.Deadline(); ok {
		left = time.Until(dl)
	}
	return int64(max(left, 0)/max(r.opt.LeaseTTL/3, time.Millisecond)) + 1
}

// spentToday adds up the billable writes of today's (UTC) runs but this
// one (whose reservation the history may already hold), from the run
// history's listing (no values read).
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
		if !strings.HasSuffix(ref.Key, ":"+r.id) {
			spent += ref.BillableWrites
		}
	}
	return spent, nil
}
