package syncer

import (
	"context"
	"errors"
	"time"

	"github.com/knue/syncjob/internal/policy"
)

// DefaultStopBefore is how long before its context's deadline a run stops
// sending writes, when Options leave it 0: time for the batches in flight
// to land and for the failures to be recorded for retry. (The Lambda
// handler's own reserve, before the deadline it gives the run, is for the
// record.)
const DefaultStopBefore = 5 * time.Second

// A run that will not finish before its deadline — the Lambda's, or a
// Cloudflare rate window that would make it wait past it — stops applying:
// the writes it has not sent, and those the deadline cut, wait for the
// next run (by name, in the summary's waitingNames), which plans from the
// registry as it is and so writes again only what did not land. The run is
// partial, not failed, and lastCommit stays.

// outOfTime says whether the run must send no more writes: its deadline is
// less than StopBefore away, or has passed.
func (r *run) outOfTime(ctx context.Context) bool {
	if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && time.Until(d) < r.opt.StopBefore
}

// readUntil is ctx for the titles step's reads: when the run has a
// deadline, they take two thirds of the time left for reads and writes
// (until StopBefore ahead of it), the writes the last third, so that a run
// whose reads alone would outlast its deadline still writes what it read
// and leaves the rest for the next run, which reads less (what landed is
// not read again). Call stop when the reads end.
func (r *run) readUntil(ctx context.Context) (rctx context.Context, stop context.CancelFunc) {
	d, ok := ctx.Deadline()
	if !ok || r.opt.DryRun { // a dry run shows the whole plan: its deadline decides
		return ctx, func() {}
	}
	left := time.Until(d) - r.opt.StopBefore
	return context.WithDeadline(ctx, time.Now().Add(left*2/3))
}

// readBeforeCutoff reads files for titles until the cutoff (readUntil);
// cut says the cutoff stopped the read. A read that reached none of the
// files by then would make no progress by stopping: it reads on, and the
// run's deadline decides (a run that times out, as without a cutoff).
func (r *run) readBeforeCutoff(ctx context.Context, head string, files []policy.File, up *uploader, put func(string, policy.Content)) (map[string]error, bool, error) {
	rctx, stop := r.readUntil(ctx)
	reached := 0
	counted := func(path string, c policy.Content) { reached++; put(path, c) } // called one at a time, as put
	readErrs, err := r.readContents(rctx, head, files, up, counted)
	stop()
	cut := cutOff(ctx, rctx)
	if cut && reached == 0 && len(withoutCut(readErrs)) == 0 {
		readErrs, err = r.readContents(ctx, head, files, up, put)
		cut = false
	}
	return readErrs, cut, err
}

// cutOff says whether the reads stopped at their own cutoff (readUntil)
// while the run's context goes on.
func cutOff(ctx, rctx context.Context) bool {
	return ctx.Err() == nil && rctx != ctx && errors.Is(rctx.Err(), context.DeadlineExceeded)
}

// isContextErr says whether err is a context's end, not an error of the
// read itself.
func isContextErr(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// withoutCut is readErrs less the reads the cutoff ended (not failures:
// those files were not reached).
func withoutCut(readErrs map[string]error) map[string]error {
	out := make(map[string]error, len(readErrs))
	for path, err := range readErrs {
		if !isContextErr(err) {
			out[path] = err
		}
	}
	return out
}

// deadlineOf is ctx's deadline, zero when it has none.
func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// timeUp says whether a write failed only because the run's time ran out:
// the deadline came while it was in flight, or the registry's rate window
// (or a 429's block) would let it go only after the deadline.
func timeUp(err error, deadline time.Time) bool {
	if deadline.IsZero() {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var rl *policy.RateLimitError
	return errors.As(err, &rl) && !rl.RetryAt.IsZero() && !rl.RetryAt.Before(deadline)
}

// afterDeadline is ctx, or, when its deadline has passed (not when it was
// cancelled: a lost lease stops everything), a context that lets the run
// record its failures for retry within recordTimeout.
func afterDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return ctx, func() {}
	}
	return context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
}

// abortErr is why the run stopped when its context ended: nil when only
// its deadline came (what it had no time for waits, see above).
func abortErr(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return nil
	}
	return ctx.Err()
}

// firstNames are the first maxNamed names, for a log line or a summary.
func firstNames(names []string) []string {
	if len(names) > maxNamed {
		return names[:maxNamed]
	}
	return names
}
