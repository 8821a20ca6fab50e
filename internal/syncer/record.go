package syncer

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"time"

	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
)

// recordTimeout bounds the metadata writes that end a run, even one whose
// context has expired: an operator must see that the run happened.
const recordTimeout = 10 * time.Second

// record turns the outcome into the run's summary, records it (unless dry:
// history, lastRun, and lastCommit when the run succeeded or every failure
// is queued for retry) and logs the summary line.
func (r *run) record(ctx context.Context, out outcome) policy.RunSummary {
	sum := r.summarize(out)
	r.phases.enter("record")
	sum.PhasesMs = maps.Clone(r.phases.ms)
	if !r.opt.DryRun {
		advance := ""
		if (sum.Status == policy.RunSuccess || sum.Status == policy.RunPartial) && sum.CommitSHA != sum.PreviousCommitSHA {
			advance = sum.CommitSHA
		}
		release := r.release(out.lease)
		// what recording will be billed for, so the day's total is right
		sum.BillableWrites += r.Registry.RecordCost(advance, release...)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
		var rerr error
		if out.lease.refused {
			// the holder's lastRun is the one that tells: history only
			rerr = r.Registry.RecordHistory(rctx, sum, r.start)
		} else {
			rerr = r.Registry.RecordRun(rctx, sum, r.start, advance, release...)
		}
		if onlyLease(rerr) {
			r.releaseAgain(rctx, out.lease)
			rerr = nil
		}
		cancel()
		if rerr != nil {
			r.log.Error("run not recorded", logkey.Error, rerr)
			sum.Status = policy.RunFailed
			sum.Error = errors.Join(errorOrNil(sum.Error), rerr).Error()
		}
		sum.Requests = r.usage(&sum)
	}
	r.phases.enter("")
	sum.PhasesMs = r.phases.ms
	sum.DurationMs = r.now().Sub(r.start).Milliseconds()
	r.logSummary(ctx, sum)
	return sum
}

// summarize builds the run's summary from its outcome, with its status.
func (r *run) summarize(out outcome) policy.RunSummary {
	sum := policy.RunSummary{
		Timestamp:         r.start.Format(policy.TimeLayout),
		RunID:             r.id,
		Trigger:           r.opt.Trigger,
		DryRun:            r.opt.DryRun,
		CommitSHA:         out.state.head,
		PreviousCommitSHA: out.state.last,
		Skipped:           []policy.Skip{},
		Conflicts:         []policy.Conflict{},
		Failures:          out.failures,
	}
	sum.Mode, sum.ModeReason = out.mode, out.reason
	if prev := out.state.prev; prev != nil {
		// Until a run plans, what is known to be skipped or in conflict is
		// what the last run knew: an aborted or unchanged run reports it too.
		sum.LastFullRun = prev.LastFullRun
		sum.Skipped = append(sum.Skipped, prev.Skipped...)
		sum.Conflicts = append(sum.Conflicts, prev.Conflicts...)
	}
	if out.counted != nil {
		count(&sum, *out.counted)
	} else if out.mode == ModeUnchanged && out.state.prev != nil {
		// nothing was planned: what a dead letter held back still is
		sum.HeldBack = out.state.prev.HeldBack
	}
	if out.fullRun {
		sum.LastFullRun = r.start.Format(time.RFC3339)
	}
	sum.ErrorCount = len(sum.Failures)
	switch {
	case out.err != nil:
		sum.Status, sum.Error = policy.RunFailed, out.err.Error()
		sum.ErrorCount = max(sum.ErrorCount, 1)
	case out.recordErr != nil:
		// Failures that are not recorded for retry would be lost if
		// lastCommit advanced: the next run must see the changes again.
		sum.Status, sum.Error = policy.RunFailed, "record failures for retry: "+out.recordErr.Error()
	case len(sum.Failures) > 0 || len(sum.HeldBack) > 0:
		sum.Status = policy.RunPartial
	default:
		sum.Status = policy.RunSuccess
	}
	// A failed run that began writing, or that started from a registry a
	// compare cannot trust, leaves the next run to plan from the head tree.
	sum.Dirty = sum.Status == policy.RunFailed && (out.wrote || out.state.unclean != "")
	sum.Requests = r.usage(&sum)
	sum.DurationMs = r.now().Sub(r.start).Milliseconds()
	return sum
}

// count sets the summary's counts from a plan.
func count(sum *policy.RunSummary, p policy.Plan) {
	sum.Added = p.Count(policy.ActAdd)
	sum.Updated = p.Count(policy.ActUpdate)
	sum.Moved = p.Count(policy.ActMove)
	sum.Deleted = p.Count(policy.ActDelete)
	sum.Migrated = p.Count(policy.ActMigrate)
	sum.Unchanged = p.Unchanged
	sum.TotalProcessed = len(p.Items) + p.Unchanged
	sum.Skipped = append([]policy.Skip{}, p.Skipped...)
	sum.Conflicts = append([]policy.Conflict{}, p.Conflicts...)
	sum.HeldBack = append([]policy.Skip(nil), p.HeldBack...)
}

// usage counts this run's requests per API, and sets on sum what a billing
// backend charged for it.
func (r *run) usage(sum *policy.RunSummary) map[string]int64 {
	u := r.Registry.Usage()
	if u.Billing {
		sum.BillableWrites = u.Writes - r.baseUsage.Writes
		sum.BillableDeletes = u.Deletes - r.baseUsage.Deletes
	}
	return map[string]int64{
		"github": r.Source.Requests() - r.baseGitHub,
		u.API:    u.Requests - r.baseUsage.Requests,
	}
}

// logSummary writes the run's one summary line.
func (r *run) logSummary(ctx context.Context, sum policy.RunSummary) {
	level := slog.LevelInfo
	if sum.Status != policy.RunSuccess {
		level = slog.LevelError
	}
	r.log.Log(ctx, level, "run finished",
		logkey.Status, sum.Status,
		logkey.Commit, sum.CommitSHA,
		logkey.Previous, sum.PreviousCommitSHA,
		logkey.Mode, sum.Mode,
		logkey.DryRun, sum.DryRun,
		logkey.Added, sum.Added,
		logkey.Updated, sum.Updated,
		logkey.Moved, sum.Moved,
		logkey.Deleted, sum.Deleted,
		logkey.Migrated, sum.Migrated,
		logkey.Unchanged, sum.Unchanged,
		logkey.Skipped, len(sum.Skipped),
		logkey.Conflicts, len(sum.Conflicts),
		logkey.Failed, sum.ErrorCount,
		logkey.Requests, sum.Requests,
		logkey.Duration, sum.DurationMs,
		logkey.Phases, sum.PhasesMs,
		logkey.BillableWrites, sum.BillableWrites,
		logkey.BillableDeletes, sum.BillableDeletes,
		logkey.Error, sum.Error,
	)
}

func errorOrNil(msg string) error {
	if msg == "" {
		return nil
	}
	return errors.New(msg)
}
