package syncer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/knue/syncjob/internal/logkey"
)

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
// for a moment after a push with the branch as it was before: that head
// need not be the commit the registry holds (an earlier push never synced,
// or lastCommit read stale on KV), and it may be behind it. Synced, it
// would end the run without the push, or refuse it as a rewind. So when
// the head is not the pushed commit and does not contain it (GitHub's
// compare: behind it, the commit unknown yet, or, for a forced push, on
// another line), the run reads the head again, waiting pushWait and then
// twice as long each time, until it moves. A head that contains the push
// (an old push redelivered, events out of order) or, for a push that was
// not forced, one on another line (the branch rewritten since) is synced
// as it is. A head that never moves fails the run: Lambda retries a failed
// asynchronous invocation, and the daily run reconciles otherwise.
func (r *run) awaitPush(ctx context.Context, head, last string) (string, error) {
	after := r.opt.After
	if after == "" || head == after {
		return head, nil
	}
	if lags, err := r.lagsPush(ctx, after, head, last); err != nil || !lags {
		return head, err
	}
	first := head
	wait, waited := pushWait, time.Duration(0)
	for range pushWaits {
		r.log.Info("branch head not yet the pushed commit", logkey.Commit, head, logkey.After, after, logkey.Wait, wait)
		if err := r.sleep(ctx, wait); err != nil {
			return head, err
		}
		waited += wait
		wait *= 2
		var err error
		// Any other head is news (the push, or a later one): it is
		// synced as it is, not compared again.
		if head, err = r.Source.Head(ctx); err != nil || head != first {
			return head, err
		}
	}
	if r.opt.Forced && head == last {
		// GitHub's view from before the push, or a later push back to the
		// synced commit: the head alone cannot tell, and syncing it would
		// record success over a registry without the push if GitHub is
		// still behind (review). A push back has its own event, whose run
		// syncs it; this one fails saying both.
		return head, fmt.Errorf("github: %w: after %s GitHub still reports %s, the registry's own commit, not the pushed %s: GitHub has not caught up with the push, or a later push put the branch back to that commit (then its own run syncs it): a retry of this run or the next scheduled run syncs what the branch holds then",
			ErrPushNotSeen, waited, head, after)
	}
	return head, fmt.Errorf("github: %w: after %s GitHub still reports %s, not the pushed %s, which it does not contain (GitHub has not caught up with the push): a retry of this run or the next scheduled run syncs what the branch holds then",
		ErrPushNotSeen, waited, head, after)
}

// lagsPush reports whether head is GitHub's view of the branch from before
// the push after (one request). "diverged" is that view only for a forced
// push, which leaves the old line; for any other push it is a branch
// rewritten since, which the run syncs. For a forced push whose event named
// the branch's commit before it, "diverged" is that view only when head is
// that commit or behind it (one request more): a head on another line is a
// later forced push, synced as it is (review: the run waited for a head
// that never came back and failed, after the later push's run succeeded).
func (r *run) lagsPush(ctx context.Context, after, head, last string) (bool, error) {
	rel, err := r.Source.Relation(ctx, after, head)
	switch {
	case err != nil:
		return false, err
	case rel == "diverged" && (!r.opt.Forced || r.opt.Before == "" || head == r.opt.Before):
		return r.opt.Forced, nil
	case rel == "diverged" && head == last:
		// the commit the registry holds is no later push: GitHub's view from before this one
		return true, nil
	case rel == "diverged":
		if rel, err = r.Source.Relation(ctx, r.opt.Before, head); err != nil {
			return false, err
		}
		return rel == "behind" || rel == "unknown", nil // identical is head == Before, taken above
	}
	return rel == "behind" || rel == "unknown", nil
}
