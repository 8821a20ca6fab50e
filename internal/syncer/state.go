package syncer

import (
	"context"
	"errors"
	"fmt"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// state is what a run reads before it chooses its mode.
type state struct {
	head, last string             // the branch head, metadata:sync:lastCommit
	prev       *policy.RunSummary // the last run; nil when none or unreadable
	lease      *registry.Lease    // the lease as found; nil when none
	// unclean says why the registry may differ from last's tree in ways
	// no queue entry records (differ.Unclean); "" after a clean run.
	unclean string
	// pending are the failed writes of earlier runs that the sync still
	// owes (see pendingRetries).
	pending map[string]policy.QueueEntry
}

// readState reads the branch head, the last commit and run, the lease, and
// the writes waiting for retry, and says whether the previous run ended
// cleanly.
func (r *run) readState(ctx context.Context) (state, error) {
	var st state
	var err error
	if st.head, err = r.Source.Head(ctx); err != nil {
		return st, err
	}
	ss, err := r.Registry.SyncState(ctx)
	if err != nil {
		return st, err
	}
	st.last, st.prev, st.lease = ss.LastCommit, ss.LastRun, ss.Lease
	if ss.LastRunErr != nil {
		r.log.Warn("last run unreadable", logkey.Error, ss.LastRunErr)
	}
	if ss.LeaseErr != nil {
		// not ours to read: taken over, and the registry checked whole
		r.log.Warn("lease unreadable", logkey.Error, ss.LeaseErr)
	}
	leftBehind := ss.LeaseErr != nil || (st.lease != nil && !st.lease.Released())
	st.unclean = differ.Unclean(st.prev, st.last, leftBehind)
	st.pending, err = r.pendingRetries(ctx, st.prev, st.unclean)
	return st, err
}

// readRegistry reads the policies (current and legacy v1) and the dead
// letters. Unreadable entries are logged, not fatal; an unreadable dead
// letter holds nothing back (a person can drop it).
func (r *run) readRegistry(ctx context.Context) (registryState, error) {
	all, problems, err := r.Registry.Policies(ctx)
	if err != nil {
		return registryState{}, fmt.Errorf("registry: read policies: %w", err)
	}
	for key, perr := range problems {
		r.log.Warn("registry entry unreadable", logkey.Key, key, logkey.Error, perr)
	}
	var st registryState
	st.entries, st.v1 = differ.SplitV1(all)
	var bad *registry.DecodeError
	if st.dead, err = r.Registry.DeadLetters(ctx); errors.As(err, &bad) {
		r.log.Warn("dead letters unreadable", logkey.Error, err)
	} else if err != nil {
		return registryState{}, fmt.Errorf("registry: read dead letters: %w", err)
	}
	return st, nil
}

// known is what the registry knows of each policy: enough to plan.
func (st registryState) known() map[string]policy.Known {
	known := make(map[string]policy.Known, len(st.entries))
	for name, e := range st.entries {
		known[name] = policy.Known{PolicyName: name, SHA: e.SHA, Path: e.Path}
	}
	return known
}
