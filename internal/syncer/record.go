package syncer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// recordTimeout bounds the metadata writes that end a run, even one whose
// context has expired: an operator must see that the run happened.
const recordTimeout = 10 * time.Second

// record is the record step: it turns what the steps returned (rep, and err
// when the run stopped) into the run's summary, records it (unless dry:
// history, lastRun, and lastCommit when the run succeeded or every failure
// is queued for retry) and logs the summary line.
func (r *run) record(ctx context.Context, rep report, err error) policy.RunSummary {
	sum := r.summarize(rep, err)
	r.phases.enter("record")
	sum.PhasesMs = maps.Clone(r.phases.ms)
	if !r.opt.DryRun && !rep.lease.overBudget { // over the budget: nothing written
		advance := ""
		if (sum.Status == policy.RunSuccess || sum.Status == policy.RunPartial) && sum.Waiting == 0 && sum.Unverified == "" && sum.CommitSHA != sum.PreviousCommitSHA {
			advance = sum.CommitSHA
		}
		if errors.Is(err, ErrLeaseLost) {
			// another run may hold it now (KV has no compare-and-swap):
			// not ours to release; the dirty lastRun makes the next run full
			rep.lease.held = false
		}
		release := r.release(rep.lease)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
		var rerr error
		// what recording will be billed for, so the day's total is right
		if rep.lease.refused {
			// the holder's lastRun is the one that tells: history only
			sum.BillableWrites += r.Registry.HistoryCost()
			rerr = r.Registry.RecordHistory(rctx, sum, r.start)
		} else {
			sum.BillableWrites += r.Registry.RecordCost(advance, release...)
			rerr = r.Registry.RecordRun(rctx, sum, r.start, advance, release...)
		}
		if onlyLease(rerr) {
			r.releaseAgain(rctx, rep.lease)
			rerr = nil
		}
		if rerr != nil {
			r.log.Error("run not recorded", logkey.Error, rerr)
			notRecorded(&sum, rep, rerr)
			if !rep.lease.refused {
				r.recordAgain(rctx, &sum, rep.lease, releasedBy(rerr))
			}
		}
		cancel()
		sum.Requests = r.usage(&sum)
	}
	r.phases.enter("")
	sum.PhasesMs = r.phases.ms
	sum.DurationMs = r.now().Sub(r.start).Milliseconds()
	r.logSummary(ctx, sum)
	return sum
}

// releasedBy says whether a failed record (err, from RecordRun) released
// the lease all the same: its first write (history, lastRun) landed, and
// the lease's key did not fail.
func releasedBy(err error) bool {
	failed, ok := batchFailed(err)
	if !ok {
		return false
	}
	for k := range failed {
		if k == registry.LastRunKey || k == registry.LeaseKey || strings.HasPrefix(k, registry.RunPrefix) {
			return false
		}
	}
	return true
}

// recordAgain writes the history and lastRun of a run whose record failed,
// now that its status is failed: what of the record landed (the history, or
// lastRun before lastCommit failed) must not say success or partial while
// the run exits 1 and lastCommit stays. It waits a second first (KV takes
// one write of a key a second). It releases the lease when the failed
// record did not and lastRun now says how the run ended: never when the
// record released it, as another run may hold it now (KV has no
// compare-and-swap).
func (r *run) recordAgain(ctx context.Context, sum *policy.RunSummary, l lease, released bool) {
	if r.sleep(ctx, 1100*time.Millisecond) != nil {
		return
	}
	sum.BillableWrites += r.Registry.RecordCost("")
	err := r.Registry.RecordRun(ctx, *sum, r.start, "")
	if err != nil {
		r.log.Error("run not recorded again; lastRun may say it went otherwise", logkey.Error, err)
	}
	if l.held && !released && lastRunLanded(err) {
		r.releaseAgain(ctx, l)
	}
}

// lastRunLanded says whether a record (err, from RecordRun) wrote lastRun.
// Until it has, the lease left behind is what tells the next run that
// this one did not finish cleanly: it must not be released.
func lastRunLanded(err error) bool {
	failed, ok := batchFailed(err)
	if err == nil || !ok {
		return err == nil
	}
	_, lost := failed[registry.LastRunKey]
	return !lost
}

// batchFailed is the keys a batch write (registry.BatchError) failed, with
// their errors; ok is false when err is not such a write's.
func batchFailed(err error) (map[string]error, bool) {
	var be *registry.BatchError
	if !errors.As(err, &be) {
		return nil, false
	}
	return be.Failed, true
}

// summarize builds the run's summary from what the steps returned, with its
// status.
func (r *run) summarize(rep report, err error) policy.RunSummary {
	sum := policy.RunSummary{
		Timestamp:         r.start.Format(policy.TimeLayout),
		RunID:             r.id,
		LeaseOwner:        r.owner(),
		Repo:              r.Repo,
		Branch:            r.Branch,
		Trigger:           r.opt.Trigger,
		Delivery:          r.opt.Delivery,
		DryRun:            r.opt.DryRun,
		CommitSHA:         rep.state.head,
		PreviousCommitSHA: rep.state.last,
		Skipped:           []policy.Skip{},
		Conflicts:         []policy.Conflict{},
		Failures:          rep.failures,
	}
	sum.Mode, sum.ModeReason = rep.mode, rep.reason
	if prev := rep.state.prev; prev != nil {
		// Until a run plans, what is known to be skipped or in conflict is
		// what the last run knew: an aborted or unchanged run reports it too.
		sum.LastFullRun, sum.LastSuccess = prev.LastFullRun, lastSuccess(prev)
		sum.Skipped = append(sum.Skipped, prev.Skipped...)
		sum.Conflicts = append(sum.Conflicts, prev.Conflicts...)
	}
	r.counts(&sum, rep)
	if rep.fullRun() {
		sum.LastFullRun = r.start.Format(time.RFC3339)
	}
	sum.ErrorCount = len(sum.Failures)
	sum.Waiting = rep.waiting
	sum.StoppedEarly, sum.WaitingNames, sum.Unreached = len(rep.late) > 0 || rep.cutShort, firstNames(rep.late), rep.unreached
	sum.Unverified = rep.unverified
	sum.QueueOrphans = queueOrphans(rep)
	sum.Pending = rep.mirror.withoutForeign(owed(rep, err))
	sum.Policies, sum.LegacyV1 = registryAfter(rep)
	setStatus(&sum, rep, err)
	sum.Repo, sum.Branch = targetOf(sum, rep.state, r.Repo, r.Branch)
	if sum.Status == policy.RunSuccess && !sum.DryRun {
		sum.LastSuccess = sum.Timestamp
	}
	sum.Dirty = dirty(sum.Status, rep)
	sum.Requests = r.usage(&sum)
	sum.Mirror = r.mirrorSummary(rep.mirror, rep, rep.state.prev)
	sum.DurationMs = r.now().Sub(r.start).Milliseconds()
	return sum
}

// lastSuccess is when the last successful run, up to and including the
// one prev records, started.
func lastSuccess(prev *policy.RunSummary) string {
	if prev.LastSuccess == "" && prev.Status == policy.RunSuccess {
		return prev.Timestamp
	}
	return prev.LastSuccess
}

// notRecorded makes sum the summary of a run whose record failed (rerr):
// failed, and so not a success and unclean if it wrote.
func notRecorded(sum *policy.RunSummary, rep report, rerr error) {
	sum.Status = policy.RunFailed
	sum.Error = errors.Join(errorOrNil(sum.Error), rerr).Error()
	sum.Dirty = dirty(sum.Status, rep)
	if sum.LastSuccess == sum.Timestamp {
		sum.LastSuccess = ""
		if prev := rep.state.prev; prev != nil {
			sum.LastSuccess = lastSuccess(prev)
		}
	}
}

// dirty says whether the run leaves the next one to plan from the head
// tree: it failed after it began writing, or it failed or was refused
// having started from a registry a compare cannot trust — or not knowing,
// since it could not read the registry's state — and so leaves it so (its
// record replaces the one that said it).
func dirty(status string, rep report) bool {
	if status != policy.RunFailed && status != policy.RunRefused {
		return false
	}
	return rep.wrote || rep.state.unclean != "" || !rep.state.read
}

// counts sets what the run knows from its plan (skips, conflicts, held
// back) and counts what it applied (on a dry run, what it would apply),
// keeping the plan's counts apart when they differ.
func (r *run) counts(sum *policy.RunSummary, rep report) {
	planned := rep.planned()
	switch {
	case planned != nil:
		known(sum, *planned)
	case rep.state.prev != nil:
		// nothing was planned (the head unchanged, or the run stopped
		// before it planned): what a dead letter held back still is, and
		// the next incremental run reads those dead letters by this list
		sum.HeldBack = rep.state.prev.HeldBack
	}
	if rep.retried != nil {
		sum.HeldBack = append(sum.HeldBack, rep.retried.newlyDead...)
	}
	counted := rep.applied
	if r.opt.DryRun {
		counted = planned
	}
	if counted != nil {
		count(sum, *counted)
		sum.Changes, sum.ChangesOmitted = counted.RunChanges()
	}
	if planned != nil && (counted == nil || planned.Counts() != counted.Counts()) {
		c := planned.Counts()
		sum.Planned = &c
	}
}

// setStatus decides the run's status: failed when it stopped or could not
// record its failures (lastCommit must not advance past failures that
// would be lost), partial while anything is failed, held back or waiting.
func setStatus(sum *policy.RunSummary, rep report, err error) {
	switch {
	case errors.Is(err, differ.ErrRefused) || errors.Is(err, registry.ErrLeaseHeld):
		// a refusal, not failed policies: errorCount counts those alone
		sum.Status, sum.Error = policy.RunRefused, err.Error()
	case err != nil:
		// an outage or an abort: the reason, not a failed policy
		sum.Status, sum.Error = policy.RunFailed, err.Error()
	case rep.retried != nil && rep.retried.err != nil:
		sum.Status, sum.Error = policy.RunFailed, "record failures for retry: "+rep.retried.err.Error()
	case len(sum.Failures) > 0 || len(sum.HeldBack) > 0 || sum.Waiting > 0 || sum.Unverified != "":
		sum.Status = policy.RunPartial
	default:
		sum.Status = policy.RunSuccess
	}
}

// owed are the names the next run must retry: what this run queued, or,
// when it stopped before that or could not record its failures, every name
// that may still wait (a name that does not is dropped by the next run).
// A run that left writes waiting — for its deadline (late) or the daily
// write budget — may have left any name it was to revisit among them: it
// owes them all again, beside what it queued, so that the next run reads
// them by name (pendingKnown) and a retry left waiting keeps its count. A
// run that never read what waits wrote nothing: it owes what the last run
// owed (nil, unknown, when it could not read even that).
func owed(rep report, err error) []string {
	st := rep.state
	if !st.pendingRead {
		if st.prev == nil {
			return nil
		}
		return st.prev.Pending
	}
	rt := rep.retried
	queued := rt != nil && err == nil && rt.err == nil
	if queued && rep.waiting == 0 {
		return rt.owed
	}
	names := slices.Clone(st.revisit)
	if queued {
		names = appendNew(names, rt.owed...)
	}
	failed := make([]string, len(rep.failures))
	for i, f := range rep.failures {
		failed[i] = f.PolicyName
	}
	names = appendNew(names, failed...)
	if names == nil {
		names = []string{}
	}
	return names
}

// appendNew appends to names those of more it does not hold, each once,
// in linear time: after a mass failure both may hold 100,000 names (review:
// a search of names per name took 26 s there).
func appendNew(names []string, more ...string) []string {
	if len(more) == 0 {
		return names
	}
	seen := make(map[string]bool, len(names)+len(more))
	for _, name := range names {
		seen[name] = true
	}
	for _, name := range more {
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	return names
}

// registryAfter is how many policies the registry holds after the run and
// which legacy v1 titles are still unmatched: from what the run planned and
// applied, or what the last run said when this one did not plan.
func registryAfter(rep report) (int, []string) {
	if rep.titled == nil {
		if prev := rep.state.prev; prev != nil {
			return prev.Policies, prev.LegacyV1
		}
		return 0, nil
	}
	n := rep.size
	if rep.applied != nil {
		c := rep.applied.Counts()
		n += c.Added - c.Deleted
	}
	return n, rep.titled.legacy
}

// planned is the plan once titles were read and guarded; nil when the run
// stopped before.
func (rep report) planned() *policy.Plan {
	if rep.titled == nil {
		return nil
	}
	return &rep.titled.plan
}

// fullRun says whether the run was a full run that applied everything.
func (rep report) fullRun() bool {
	return rep.retried != nil && rep.mode == differ.ModeFull && len(rep.failures) == 0 && rep.waiting == 0
}

// count sets the summary's counts from what the run applied.
func count(sum *policy.RunSummary, p policy.Plan) {
	c := p.Counts()
	sum.Added, sum.Updated, sum.Moved, sum.Deleted, sum.Migrated, sum.Unchanged = c.Added, c.Updated, c.Moved, c.Deleted, c.Migrated, c.Unchanged
	sum.TotalProcessed = p.Len() + p.Unchanged
}

// known sets what the plan knows whether or not it was applied: the files
// skipped, the names in conflict, the versions held back.
func known(sum *policy.RunSummary, p policy.Plan) {
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
	req := map[string]int64{
		"github": r.Source.Requests() - r.baseGitHub,
		u.API:    u.Requests - r.baseUsage.Requests,
	}
	if r.Mirror != nil {
		st := r.Mirror.Stats()
		req["mirror"] = st.Puts + st.Deletes + st.Lists - r.baseMirror.Puts - r.baseMirror.Deletes - r.baseMirror.Lists
	}
	return req
}

// logSummary writes the run's one summary line.
func (r *run) logSummary(ctx context.Context, sum policy.RunSummary) {
	level := slog.LevelInfo
	if sum.Status != policy.RunSuccess {
		level = slog.LevelError
	}
	attrs := []any{
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
	}
	if sum.Planned != nil {
		attrs = append(attrs, logkey.Planned, *sum.Planned)
	}
	failed := make([]string, len(sum.Failures))
	for i, f := range sum.Failures {
		failed[i] = f.PolicyName
	}
	if len(sum.Changes) > 0 {
		attrs = append(attrs, logkey.Changes, sum.Changes)
		if sum.ChangesOmitted > 0 {
			attrs = append(attrs, logkey.ChangesOmitted, sum.ChangesOmitted)
		}
	}
	attrs = appendNames(attrs, logkey.FailedPolicies, failed)
	attrs = appendNames(attrs, logkey.SkippedPolicies, skipNames(sum.Skipped))
	attrs = appendNames(attrs, logkey.HeldBackPolicies, skipNames(sum.HeldBack))
	if sum.Waiting > 0 {
		attrs = append(attrs, logkey.Waiting, sum.Waiting)
	}
	if sum.Unreached > 0 {
		attrs = append(attrs, logkey.Unreached, sum.Unreached)
	}
	attrs = appendNames(attrs, logkey.WaitingPolicies, sum.WaitingNames)
	if sum.Error != "" {
		attrs = append(attrs, logkey.Error, sum.Error)
	}
	r.log.Log(ctx, level, "run finished", attrs...)
}

// maxNamed is how many policies a summary line names in one list; the rest
// are counted.
const maxNamed = 20

// appendNames adds key with the first maxNamed names, and "… and N more"
// for the rest; nothing when there are none.
func appendNames(attrs []any, key string, names []string) []any {
	if len(names) == 0 {
		return attrs
	}
	if len(names) > maxNamed {
		names = append(slices.Clone(names[:maxNamed]), fmt.Sprintf("… and %d more", len(names)-maxNamed))
	}
	return append(attrs, key, names)
}

func skipNames(skips []policy.Skip) []string {
	names := make([]string, len(skips))
	for i, s := range skips {
		names[i] = s.PolicyName
		if names[i] == "" {
			names[i] = s.Path
		}
	}
	return names
}

func errorOrNil(msg string) error {
	if msg == "" {
		return nil
	}
	return errors.New(msg)
}
