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
)

// DefaultConsistencyWindow is how long a read of an eventually consistent
// registry (Workers KV) may lag a write made elsewhere: a run that cannot
// tell which names the runs of that window wrote waits it out.
const DefaultConsistencyWindow = 60 * time.Second

// maxTouchedCommits is how many commits since the synced one a run reads
// one by one to learn the names they touched; past it, it waits out the
// consistency window instead.
const maxTouchedCommits = 100

// maxDistrusted is how many touched names a run after one that left
// writes waiting writes again whatever the registry says; past it, it
// waits out the consistency window instead. Such a run (its deadline or
// the write budget stopped it) keeps lastCommit, so the next run's range
// touches every name it wrote: writing them all again costs more than the
// wait and, when they do not fit one run, the run after stops at the same
// place (review). After a clean run the names a range touches are mostly
// the plan's own writes, which cost nothing more: no wait then.
const maxDistrusted = 100

// errRangeUnknown: the names the commits since the synced one touched
// cannot be known (too many commits, the synced one unknown to GitHub or
// not an ancestor of the head, a commit too large to list), or are more
// than maxDistrusted.
var errRangeUnknown = errors.New("names touched since the synced commit unknown")

// readSettled is the read step (read.go) on a registry whose reads may lag
// its writes (docs/design.md, "Stale reads"). The lastCommit read may be
// older than the last run's, and an entry read may predate that run's
// write; the names such a run may have written are those a commit after
// the lastCommit read touched. readSettled learns them (in.touched: the
// plan writes them from the head whatever the registry said); when it
// cannot, or the state shows a run that failed writing, or a webhook run's
// push was forced (untrusted), it waits out the consistency window, under
// the lease, and reads the state again, when every earlier write is
// visible; a run that state shows unclean makes this one full. A strongly
// consistent registry (bolt,
// memory) reads once, with no extra request; so does a first sync (nothing
// synced before), unless it finds policies but no lastRun: then it waits
// too. A first sync within the window of another one's end that sees an
// older lastRun (of a run its deadline stopped) may still miss that run's
// last writes (docs/design.md, "Stale reads").
func (r *run) readSettled(ctx context.Context, st state, mode, reason string, ahead *readAhead) (state, readForPlan, error) {
	lagging := r.Registry.EventuallyConsistent()
	var unverified string
	if lagging {
		skipped, why := r.untrusted(ctx, st)
		if why != nil {
			return r.settle(ctx, st, mode, reason, ahead, why)
		}
		unverified = skipped
	}
	if unverified != "" {
		// no time to wait: read as it is, trusting even what cannot be
		// named (settle would wait the window there is no time for)
		in, err := r.read(ctx, st, mode, reason, false, ahead)
		st, err = ahead.takePending(ctx, st, err)
		in.unverified = unverified
		return st, in, err
	}
	return r.readTrusting(ctx, st, mode, reason, ahead, lagging)
}

// readTrusting is readSettled once the state owes no wait: it reads, and
// waits only when the reads cannot name what the window's runs wrote.
func (r *run) readTrusting(ctx context.Context, st state, mode, reason string, ahead *readAhead, lagging bool) (state, readForPlan, error) {
	if !lagging || st.last == "" {
		in, err := r.read(ctx, st, mode, reason, false, ahead)
		st, err = ahead.takePending(ctx, st, err) // read beside the listings (early.go)
		if err != nil || !lagging || st.prev != nil || len(in.reg.entries) == 0 {
			return st, in, err
		}
		// A first sync that finds policies this job wrote, and no record of
		// the run that wrote them (a first sync its deadline stopped records
		// one), read the state from before that run, whose other writes it
		// may not see either (a soak found one recording success over a
		// policy the head had deleted): wait out the window, read it all again.
		err = fmt.Errorf("%w: no lastCommit nor lastRun, but %d policies", errRangeUnknown, len(in.reg.entries))
		return r.settle(ctx, st, mode, reason, ahead, err)
	}
	in, err := r.read(ctx, st, mode, reason, true, ahead)
	if st, err = ahead.takePending(ctx, st, err); !errors.Is(err, errRangeUnknown) {
		return st, in, err
	}
	return r.settle(ctx, st, mode, reason, ahead, err)
}

// untrusted says why the run must wait out the window before it reads,
// on a registry whose reads lag: the state shows a run that failed writing
// (failedWriting), first sync or not, or one that could not wait, or the
// push of a webhook run was forced. Nil when neither, and for a dry run (it writes nothing: a minute
// per preview is too dear) or a run whose deadline leaves no time to wait
// and still run: each would fail waiting, and each failure after an
// unclean run is unclean again, so none would ever converge (review). Such
// a run reads as it is, and skipped says why it cannot end a success: what
// it read may predate the writes it should have waited for (review: a
// forced push's run with MAX_DURATION=90s recorded success over a policy
// the push had dropped). Partial, it keeps lastCommit, and the next run is
// full.
func (r *run) untrusted(ctx context.Context, st state) (skipped string, why error) {
	switch {
	case failedWriting(st):
		why = fmt.Errorf("%w: %s", errRangeUnknown, st.unclean)
	case st.prev != nil && st.prev.Unverified != "":
		// what it trusted may have hidden such writes from it too
		why = fmt.Errorf("%w: the previous run could not wait out the window", errRangeUnknown)
	case r.opt.Forced:
		why = fmt.Errorf("%w: the push was forced", errRangeUnknown)
	default:
		return "", nil
	}
	if r.opt.DryRun {
		r.log.Warn("not waiting out the consistency window (a dry run): reads are trusted as they are", logkey.Reason, why.Error())
		return "", nil
	}
	if !r.timeToWait(ctx) {
		r.log.Warn("no time to wait out the consistency window: reads are trusted as they are, and the run cannot end a success", logkey.Reason, why.Error())
		return fmt.Sprintf("reads not waited for (%s): the run's deadline leaves no time to wait out the registry's consistency window (%s) twice; set MAX_DURATION, or the Lambda's timeout, above that", why, r.opt.ConsistencyWindow), nil
	}
	return "", why
}

// timeToWait says whether the run's deadline, if any, leaves time to wait
// out the consistency window and still run: two windows.
func (r *run) timeToWait(ctx context.Context) bool {
	d := deadlineOf(ctx)
	return d.IsZero() || time.Until(d) >= 2*r.opt.ConsistencyWindow
}

// failedWriting says the state shows a run that died (its lease left) or
// failed after it began writing. The run that repairs it, soon after (Lambda
// retries a failed run), may be in the window and hidden by this read; it
// planned from its head tree, and once a force push has dropped that head no
// commit of last..head names what it wrote (a soak found a full run trusting
// entries from before such a repair). Such states are rare: the run waits.
func failedWriting(st state) bool {
	return st.leftBehind || (st.prev != nil && st.prev.Dirty)
}

// settle waits out the consistency window, under the lease, reads the
// state again, when every earlier write is visible, and reads what the plan
// needs with no distrust; a run that state shows unclean makes this one
// full. why says why it waits.
func (r *run) settle(ctx context.Context, st state, mode, reason string, ahead *readAhead, why error) (state, readForPlan, error) {
	var in readForPlan
	r.log.Info("waiting out the consistency window", logkey.Reason, why.Error(), logkey.Wait, r.opt.ConsistencyWindow)
	if err := r.sleep(ctx, r.opt.ConsistencyWindow); err != nil {
		return st, in, err
	}
	st, err := r.refreshState(ctx, st)
	if err != nil {
		return st, in, err
	}
	if st.unclean != "" {
		// the stale read hid an unclean run: a compare cannot name what it left
		mode, reason = differ.ModeFull, st.unclean
	}
	in, err = r.read(ctx, st, mode, reason, false, ahead)
	return st, in, err
}

// refreshState reads again what the state step read of the registry, the
// head and the lease aside (the lease is this run's now).
func (r *run) refreshState(ctx context.Context, st state) (state, error) {
	ss, err := r.Registry.SyncState(ctx)
	if err != nil {
		return st, err
	}
	st.last, st.prev = ss.LastCommit, ss.LastRun
	st.unclean = differ.Unclean(st.prev, st.last, st.leftBehind)
	st.pending, st.revisit, err = r.pendingRetries(ctx, st)
	st.pendingRead = err == nil
	return st, err
}

// touchedSince returns the names whose registry reads it must not trust:
// those touched by a commit of last..head other than the head's own. A run
// of the window synced one of those commits at most; a name only the head
// commit touched reads as the base's run or a run at the head left it,
// and the plan from either is right (docs/design.md, "Stale reads"). cs is
// the compare, when given; else (a full run) it is made here. Untrusted,
// the compare leaves them unknown (errRangeUnknown).
func (r *run) touchedSince(ctx context.Context, st state, cs *policy.Changeset) (map[string]bool, error) {
	if cs == nil {
		if st.last == st.head {
			return map[string]bool{}, nil
		}
		c, err := r.Source.Compare(ctx, st.last, st.head)
		if errors.Is(err, policy.ErrCompareUntrusted) {
			return nil, fmt.Errorf("%w: %w", errRangeUnknown, err)
		} else if err != nil {
			return nil, err
		}
		cs = &c
	}
	paths, err := r.interim(ctx, cs)
	if err != nil {
		return nil, err
	}
	touched := differ.TouchedNames(paths)
	if prev := st.prev; prev != nil && (prev.StoppedEarly || prev.Waiting > 0) && len(touched) > maxDistrusted {
		return nil, fmt.Errorf("%w: %d names touched since %s after a run that left writes waiting (at most %d are written again whatever the registry says)", errRangeUnknown, len(touched), cs.Base, maxDistrusted)
	}
	return touched, nil
}

// interim returns the paths the commits of the range but the head's own
// changed, and sets cs.Interim: those the compare, which shows only where
// the range ends, does not list (a file changed and changed back; the
// head's own changes are all in the compare). A range of one commit has
// none and costs no request; a longer one, a request per commit (and per
// 300 files of one), at most maxTouchedCommits of them.
func (r *run) interim(ctx context.Context, cs *policy.Changeset) ([]string, error) {
	if cs.TotalCommits <= 1 {
		return nil, nil
	}
	if cs.TotalCommits > maxTouchedCommits || len(cs.Commits) < cs.TotalCommits {
		return nil, fmt.Errorf("%w: %d commits since %s (at most %d are read one by one)", errRangeUnknown, cs.TotalCommits, cs.Base, maxTouchedCommits)
	}
	listed := map[string]bool{}
	for _, ch := range cs.Changes {
		listed[ch.Path], listed[ch.PreviousPath] = true, true
	}
	var all []string
	for _, sha := range cs.Commits {
		if sha == cs.Head {
			continue
		}
		paths, err := r.Source.CommitPaths(ctx, sha)
		if errors.Is(err, policy.ErrCompareUntrusted) {
			return nil, fmt.Errorf("%w: %w", errRangeUnknown, err)
		} else if err != nil {
			return nil, err
		}
		for _, p := range paths {
			all = append(all, p)
			if policy.IsPolicyPath(p) && !listed[p] {
				listed[p] = true
				cs.Interim = append(cs.Interim, p)
			}
		}
	}
	slices.Sort(cs.Interim)
	return all, nil
}
