package syncer

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/queue"
	"github.com/knue/syncjob/internal/registry"
)

// state is what a run reads before it chooses its mode.
type state struct {
	head, last string             // the branch head, metadata:sync:lastCommit
	prev       *policy.RunSummary // the last run; nil when none or unreadable
	lease      *registry.Lease    // the lease as found; nil when none
	// unclean says why the registry may differ from last's tree in ways
	// no queue entry records (differ.Unclean); "" after a clean run.
	unclean    string
	leftBehind bool // the last run left its lease behind (differ.Unclean)
	live       bool // another run holds the lease now (as far as the read is fresh)
	// pending are the failed writes of earlier runs that the sync still
	// owes; revisit the names the plan must look at again, those among
	// them (see pendingRetries).
	pending map[string]policy.QueueEntry
	revisit []string
	// pendingLater: pending and revisit are not read yet; the lease step
	// reads them (early.go), since the mode did not need them.
	pendingLater bool
	// read: the registry's state (last, prev, lease, unclean) was read;
	// pendingRead: pending and revisit were.
	read, pendingRead bool
}

// before is what the planning takes of the state.
func (st state) before() differ.Before {
	return differ.Before{Last: st.prev, Unclean: st.unclean, Revisit: st.revisit}
}

// readState reads the branch head, the last commit and run, the lease, and
// the writes waiting for retry, and says whether the previous run ended
// cleanly. The head and the registry's state are read at once: neither
// read depends on the other, and a run that follows another by seconds
// distrusts what it read either way (stale.go). When the mode will be full
// whatever waits for retry, the lease step reads that instead (early.go).
func (r *run) readState(ctx context.Context) (state, error) {
	var st state
	var err error
	ssc := make(chan syncState, 1)
	go func() {
		ss, err := r.Registry.SyncState(ctx)
		ssc <- syncState{ss, err}
	}()
	st.head, err = r.Source.Head(ctx)
	got := <-ssc
	if got.err == nil {
		// What the last run recorded (its last full run, whether the
		// registry is clean, what waits for retry) is known even when the
		// head is not: a run that fails now carries it into its record
		// (record.go), so that a GitHub outage neither makes the next run
		// full for "no full run recorded" nor hides an unclean registry.
		st = r.stateOf(st, got.ss)
	}
	if err != nil {
		return st, err
	}
	if got.err != nil {
		return st, got.err
	}
	if st.head, err = r.awaitPush(ctx, st.head, st.last); err != nil {
		return st, err
	}
	if r.opt.Full || st.last == "" {
		// the mode is full whatever waits for retry (differ.ChooseMode)
		st.pendingLater = true
		return st, nil
	}
	st.pending, st.revisit, err = r.pendingRetries(ctx, st)
	st.pendingRead = err == nil
	return st, err
}

// stateOf is st with what the registry's state says: the last commit and
// run, the lease, and whether the previous run ended cleanly.
func (r *run) stateOf(st state, ss registry.SyncState) state {
	st.read = true
	st.last, st.prev, st.lease = ss.LastCommit, ss.LastRun, ss.Lease
	if ss.LastRunErr != nil {
		r.log.Warn("last run unreadable", logkey.Error, ss.LastRunErr)
	}
	if ss.LeaseErr != nil {
		// not ours to read: taken over, and the registry checked whole
		r.log.Warn("lease unreadable", logkey.Error, ss.LeaseErr)
	}
	// A lease another run holds now is not left behind: that run is alive,
	// and this one will be refused when it tries to take it.
	st.live = st.lease != nil && st.lease.Holds(r.start) && st.lease.Owner != r.owner()
	st.leftBehind = ss.LeaseErr != nil || (st.lease != nil && !st.lease.Released() && !st.live)
	st.unclean = differ.Unclean(st.prev, st.last, st.leftBehind)
	return st
}

// syncState is the registry's state as read beside the head.
type syncState struct {
	ss  registry.SyncState
	err error
}

// pendingRetries returns the failed writes of earlier runs that the sync
// still owes — failed queue entries whose registry entry does not hold their
// version (entries a worker failed, whose version the registry holds, are
// the worker's) — and every name the next plan must look at again: those,
// the names the last run could not queue (a failed move) and those it held
// back whose dead letter is gone. After a run that recorded them
// (prev.Pending: pendingKnown), only those names are read; otherwise the
// queue is listed too, and what it owes is read beside them, in bulk (a
// record that is not trusted whole still names what it carried: review).
func (r *run) pendingRetries(ctx context.Context, st state) (map[string]policy.QueueEntry, []string, error) {
	var revisit, listed []string
	if prev := st.prev; prev != nil && prev.Pending != nil {
		revisit = appendNew(slices.Clone(prev.Pending), r.releasedSince(ctx, prev)...)
	}
	if !pendingKnown(st) {
		failed, err := r.Registry.FailedQueue(ctx)
		var bad *registry.DecodeError
		if errors.As(err, &bad) {
			r.log.Warn("queue entries unreadable", logkey.Error, err)
		} else if err != nil {
			return nil, nil, err
		}
		listed = slices.Sorted(maps.Keys(failed))
	}
	pending := map[string]policy.QueueEntry{}
	names := appendNew(slices.Clone(revisit), listed...)
	if len(names) == 0 {
		return pending, nil, nil
	}
	queued, entries, err := r.Registry.Owed(ctx, names)
	var bad *registry.DecodeError
	if errors.As(err, &bad) {
		r.log.Warn("queue or registry entries unreadable", logkey.Error, err)
	} else if err != nil {
		return nil, nil, err
	}
	for name, q := range queued {
		cur, present := entries[name]
		if queue.SyncPending(q, cur, present) {
			pending[name] = q
		}
	}
	owed := slices.DeleteFunc(listed, func(name string) bool { _, ok := pending[name]; return !ok })
	return pending, appendNew(revisit, owed...), nil // a listed entry is looked at again only when the sync owes it
}

// releasedSince are the names the last run held back by a dead letter
// that is gone now: a person retried or dropped it. Their request to
// retry is in lastRun.pending, but a run within the consistency window of
// it may have read the state from before and recorded over it (review:
// every later run then said "held back" of a dead letter that no longer
// existed, and the version waited for the daily reconcile). One listing
// of the dead letters, only when the last run held some back; on an error
// none are taken for gone.
func (r *run) releasedSince(ctx context.Context, prev *policy.RunSummary) []string {
	if len(prev.HeldBack) == 0 {
		return nil
	}
	dead, err := r.Registry.DeadLetters(ctx)
	if err != nil {
		r.log.Warn("dead letters unreadable", logkey.Error, err)
		return nil
	}
	var gone []string
	for _, h := range prev.HeldBack {
		if _, ok := dead[h.PolicyName]; !ok {
			gone = append(gone, h.PolicyName)
		}
	}
	return gone
}

// pendingKnown says whether the last run's record names every write the
// sync owes (prev.Pending): a clean run's does, and so does one that left
// writes waiting, for its deadline or the write budget — it recorded
// itself whole: its failures, and every name it was to revisit, since it
// may have left any of them waiting (owed) — unless it also left its lease
// or was dirty. Then the queue is not listed: after a first sync cut in
// many runs it holds an entry per policy announced, a listing of one
// request per 1,000. A run that failed or was refused before it planned
// recorded what it read of the run before it, which may be older than the
// record it replaced: a read that lagged (Workers KV), or a run that
// recorded between its read and its record. The queue, listed, holds the
// failures of that hidden run (review: a full run's failed repair at an
// unchanged head, whose record a run seconds later replaced, was never
// retried); its failed moves, owed by name only, need the full run
// differ.Unclean makes when the hidden run moved lastCommit.
func pendingKnown(st state) bool {
	prev := st.prev
	if prev == nil || prev.Pending == nil || (prev.Mode == "" && (prev.Status == policy.RunFailed || prev.Status == policy.RunRefused)) {
		return false
	}
	return st.unclean == "" || (prev.Waiting > 0 && !prev.Dirty && !st.leftBehind)
}
