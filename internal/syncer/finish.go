package syncer

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"time"

	"github.com/knue/syncjob/internal/policy"
)

// recordTimeout bounds the metadata writes that end a run, even one whose
// context has expired: an operator must see that the run happened.
const recordTimeout = 10 * time.Second

// finish sets the status, records the run (unless dry) and logs the summary line.
func (r *run) finish(ctx context.Context, err error) policy.RunSummary {
	sum := &r.sum
	sum.Timestamp = r.start.Format(timeLayout)
	sum.ErrorCount = len(sum.Failures)
	switch {
	case err != nil:
		sum.Status = policy.RunFailed
		sum.Error = err.Error()
		if sum.ErrorCount == 0 {
			sum.ErrorCount = 1
		}
	case r.recordErr != nil:
		// Failures that are not recorded for retry would be lost if
		// lastCommit advanced: the next run must see the changes again.
		sum.Status = policy.RunFailed
		sum.Error = "record failures for retry: " + r.recordErr.Error()
	case len(sum.Failures) > 0:
		sum.Status = policy.RunPartial
	default:
		sum.Status = policy.RunSuccess
	}
	sum.Requests = r.requests()
	sum.DurationMs = r.now().Sub(r.start).Milliseconds()
	r.enter("record")
	sum.PhasesMs = maps.Clone(r.phases)

	if !r.opt.DryRun {
		advance := ""
		if (sum.Status == policy.RunSuccess || sum.Status == policy.RunPartial) && sum.CommitSHA != sum.PreviousCommitSHA {
			advance = sum.CommitSHA
		}
		// what recording will be billed for, so the day's total is right
		sum.BillableWrites += r.Registry.RecordCost(advance, r.releaseWrites()...)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
		var rerr error
		if r.leaseRefused {
			// the holder's lastRun is the one that tells: history only
			rerr = r.Registry.RecordHistory(rctx, *sum, r.start)
		} else {
			rerr = r.Registry.RecordRun(rctx, *sum, r.start, advance, r.releaseWrites()...)
		}
		cancel()
		if rerr != nil {
			r.log.Error("run not recorded", KeyError, rerr)
			sum.Status = policy.RunFailed
			sum.Error = errors.Join(errorOrNil(sum.Error), rerr).Error()
		}
		sum.Requests = r.requests()
	}
	r.enter("")
	sum.PhasesMs = r.phases
	sum.DurationMs = r.now().Sub(r.start).Milliseconds()

	level := slog.LevelInfo
	if sum.Status != policy.RunSuccess {
		level = slog.LevelError
	}
	r.log.Log(ctx, level, "run finished",
		KeyStatus, sum.Status,
		KeyCommit, sum.CommitSHA,
		KeyPrevious, sum.PreviousCommitSHA,
		KeyMode, sum.Mode,
		"dryRun", sum.DryRun,
		"added", sum.Added,
		"updated", sum.Updated,
		"moved", sum.Moved,
		"deleted", sum.Deleted,
		"migrated", sum.Migrated,
		"unchanged", sum.Unchanged,
		"skipped", len(sum.Skipped),
		"conflicts", len(sum.Conflicts),
		"failed", sum.ErrorCount,
		KeyRequests, sum.Requests,
		KeyDuration, sum.DurationMs,
		KeyPhases, sum.PhasesMs,
		"billableWrites", sum.BillableWrites,
		"billableDeletes", sum.BillableDeletes,
		KeyError, sum.Error,
	)
	return *sum
}

func errorOrNil(msg string) error {
	if msg == "" {
		return nil
	}
	return errors.New(msg)
}

// requests counts this run's requests per API, and sets what a billing
// backend charged for it.
func (r *run) requests() map[string]int64 {
	u := r.Registry.Usage()
	if u.Billing {
		r.sum.BillableWrites = u.Writes - r.baseUsage.Writes
		r.sum.BillableDeletes = u.Deletes - r.baseUsage.Deletes
	}
	return map[string]int64{
		"github": r.Source.Requests() - r.baseGitHub,
		u.API:    u.Requests - r.baseUsage.Requests,
	}
}
