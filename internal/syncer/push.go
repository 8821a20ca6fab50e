package syncer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/retry"
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
