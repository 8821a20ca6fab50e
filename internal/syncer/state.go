package syncer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/retry"
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
	// owes; revisit the names the plan must look at again, those among
	// them (see pendingRetries).
	pending map[string]policy.QueueEntry
	revisit []string
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
	if st.head, err = r.awaitPush(ctx, st.head, st.last); err != nil {
		return st, err
	}
	if ss.LastRunErr != nil {
		r.log.Warn("last run unreadable", logkey.Error, ss.LastRunErr)
	}
	if ss.LeaseErr != nil {
		// not ours to read: taken over, and the registry checked whole
		r.log.Warn("lease unreadable", logkey.Error, ss.LeaseErr)
	}
	// A lease another run holds now is not left behind: that run is alive,
	// and this one will be refused when it tries to take it.
	live := st.lease != nil && st.lease.Holds(r.start) && st.lease.Owner != r.owner()
	leftBehind := ss.LeaseErr != nil || (st.lease != nil && !st.lease.Released() && !live)
	st.unclean = differ.Unclean(st.prev, st.last, leftBehind)
	st.pending, st.revisit, err = r.pendingRetries(ctx, st.prev, st.unclean)
	return st, err
}

// readRegistry reads what a plan needs of the registry: the policies
// (current and legacy v1) and the dead letters — every one; or, when names
// is not nil, the entries of names and the dead
// letters of held, in one bulk read. Unreadable values are logged, not
// fatal; an unreadable dead letter holds nothing back (a person can drop
// it).
func (r *run) readRegistry(ctx context.Context, st state, names, held []string) (registryState, error) {
	var (
		reg      registryState
		all      map[string]policy.Entry
		problems map[string]error
	)
	if names != nil {
		sel, err := r.Registry.Select(ctx, names, held)
		if err != nil {
			return reg, fmt.Errorf("registry: read policies: %w", err)
		}
		all, problems, reg.dead = sel.Entries, sel.Problems, sel.DeadLetters
		reg.partial, reg.size = true, st.prev.Policies
	} else {
		var err error
		if all, problems, reg.dead, err = r.listRegistry(ctx); err != nil {
			return reg, err
		}
	}
	for key, perr := range problems {
		r.log.Warn("registry entry unreadable", logkey.Key, key, logkey.Error, perr)
	}
	reg.entries, reg.v1 = differ.SplitV1(all)
	if !reg.partial {
		reg.size = len(reg.entries)
	}
	return reg, nil
}

// listRegistry lists every policy, then every dead letter. (One after the
// other: the head tree is read beside them, and a failed listing must be
// the one that fails the run.)
func (r *run) listRegistry(ctx context.Context) (map[string]policy.Entry, map[string]error, map[string]policy.DeadLetter, error) {
	all, problems, err := r.Registry.Policies(ctx)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("registry: read policies: %w", err)
	}
	dead, err := r.Registry.DeadLetters(ctx)
	var bad *registry.DecodeError
	if errors.As(err, &bad) {
		r.log.Warn("dead letters unreadable", logkey.Error, err)
	} else if err != nil {
		return nil, nil, nil, fmt.Errorf("registry: read dead letters: %w", err)
	}
	return all, problems, dead, nil
}

// known is what the registry knows of each policy: enough to plan.
func (st registryState) known() map[string]policy.Known {
	known := make(map[string]policy.Known, len(st.entries))
	for name, e := range st.entries {
		known[name] = policy.Known{PolicyName: name, SHA: e.SHA, Path: e.Path}
	}
	return known
}

// readV1 reads, for a run that read only the entries it touches, the legacy
// v1 entries (keyed by title) whose fields a policy this run writes takes:
// those of the titles the last full run found unmatched (legacy) that a put
// of the plan now has.
func (r *run) readV1(ctx context.Context, plan policy.Plan, legacy []string) (map[string]policy.Entry, error) {
	var titles []string
	for _, it := range plan.Items {
		if it.Action != policy.ActDelete && slices.Contains(legacy, it.Title) {
			titles = append(titles, it.Title)
		}
	}
	if len(titles) == 0 {
		return nil, nil
	}
	all, problems, err := r.Registry.Entries(ctx, titles)
	if err != nil {
		return nil, fmt.Errorf("registry: read legacy entries: %w", err)
	}
	for key, perr := range problems {
		r.log.Warn("registry entry unreadable", logkey.Key, key, logkey.Error, perr)
	}
	_, v1 := differ.SplitV1(all)
	return v1, nil
}

// legacyLeft are the v1 keys no policy has taken the fields of after this
// run: what Migrate found unmatched on a run that read every entry; on one
// that read only what it touched, the last run's less those matched now.
func legacyLeft(out outcome, reg registryState, mig differ.Migration) []string {
	if !reg.partial {
		return append([]string{}, mig.Unmatched...)
	}
	var left []string
	for _, key := range out.state.prev.LegacyV1 {
		if _, matched := reg.v1[key]; !matched || slices.Contains(mig.Unmatched, key) {
			left = append(left, key)
		}
	}
	return left
}

// ErrPushNotSeen ends a webhook run whose pushed commit GitHub never
// reported as the branch head (Options.After).
var ErrPushNotSeen = errors.New("the branch head is not the pushed commit")

// A webhook run reads the head again pushWaits times, the first pushWait
// later, each wait twice the one before: 15 s in all.
const (
	pushWaits = 4
	pushWait  = time.Second
)

// awaitPush returns the branch head a webhook run syncs. GitHub can answer
// for a moment after a push with the branch as it was before: the head it
// reports is still the commit the registry holds (last), and the run would
// end unchanged without the push. When that head does not contain the
// pushed commit (GitHub's compare: behind it, or the commit unknown yet),
// the run reads the head again, waiting pushWait and then twice as long
// each time, until it moves. A head that is or contains the pushed commit
// (an old push redelivered, events out of order), one on another line
// (the branch was rewritten since), or any other commit than last, is
// synced as it is. A head that never moves fails the run: Lambda retries a
// failed asynchronous invocation, and the daily run reconciles otherwise.
func (r *run) awaitPush(ctx context.Context, head, last string) (string, error) {
	after := r.opt.After
	if after == "" || head == after || head != last {
		return head, nil
	}
	switch rel, err := r.Source.Relation(ctx, after, head); {
	case err != nil:
		return head, err
	case rel != "behind" && rel != "unknown":
		return head, nil // head holds the push, or the branch was rewritten
	}
	sleep := r.Sleep
	if sleep == nil {
		sleep = retry.Sleep
	}
	wait, waited := pushWait, time.Duration(0)
	for range pushWaits {
		r.log.Info("branch head not yet the pushed commit", logkey.Commit, head, logkey.After, after, logkey.Wait, wait)
		if err := sleep(ctx, wait); err != nil {
			return head, err
		}
		waited += wait
		wait *= 2
		var err error
		if head, err = r.Source.Head(ctx); err != nil || head == after || head != last {
			return head, err
		}
	}
	return head, fmt.Errorf("github: %w: after %s GitHub still reports %s, the commit the registry holds, not the pushed %s, which it does not contain (GitHub has not caught up with the push): a retry of this run or the next scheduled run syncs what the branch holds then",
		ErrPushNotSeen, waited, head, after)
}
