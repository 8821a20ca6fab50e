package syncer

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/retry"
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

// errCutoff ends the titles step's reads at their cutoff (readUntil).
var errCutoff = errors.New("reads cut off to leave time for the writes")

// readUntil is ctx for the titles step's reads: when the run has a
// deadline, they take two thirds of the time left for reads and writes
// (until StopBefore ahead of it), the writes the last third, so that a run
// whose reads alone would outlast its deadline still writes what it read
// and leaves the rest for the next run, which reads less (what landed is
// not read again). Call stop when the reads end.
//
// A read that has reached none of its files by the cutoff would make no
// progress by stopping. When it hands each file over as it reads it
// (watch: reached counts them), it reads on, on the same stream — an
// archive asked for again would start again from its beginning — and is
// looked at again when half the time then left has passed, and so on; if
// it reaches none before StopBefore, the run's deadline decides (a run
// that times out, as without a cutoff).
func (r *run) readUntil(ctx context.Context, reached *atomic.Int64, watch bool) (rctx context.Context, stop func()) {
	d, ok := ctx.Deadline()
	if !ok || r.opt.DryRun { // a dry run shows the whole plan: its deadline decides
		return ctx, func() {}
	}
	end := d.Add(-r.opt.StopBefore)
	rctx, cancel := context.WithCancelCause(ctx)
	go func() {
		wait := time.Until(end) * 2 / 3
		for {
			t := time.NewTimer(max(wait, 0))
			select {
			case <-rctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			if !watch || reached.Load() > 0 {
				cancel(errCutoff)
				return
			}
			left := time.Until(end)
			if left <= 0 {
				return // the deadline decides
			}
			wait = max(left/2, min(left, minCutoffCheck))
		}
	}()
	return rctx, func() { cancel(context.Canceled) }
}

// minCutoffCheck is the shortest wait between two looks at a read that
// has reached none of its files past its cutoff.
const minCutoffCheck = 10 * time.Millisecond

// readBeforeCutoff reads files for titles until the cutoff (readUntil);
// cut says the cutoff stopped the read. A Source that returns what it
// read only when its read ends (not a TitleStreamer) is cut at the
// cutoff; when that read reached none of the files, it is read again, and
// the run's deadline decides.
func (r *run) readBeforeCutoff(ctx context.Context, head string, files []policy.File, up *uploader, put func(string, policy.Content)) (map[string]error, bool, error) {
	var reached atomic.Int64
	_, streams := r.Source.(TitleStreamer)
	rctx, stop := r.readUntil(ctx, &reached, streams)
	counted := func(path string, c policy.Content) { reached.Add(1); put(path, c) } // called one at a time, as put
	readErrs, err := r.readContents(rctx, head, files, up, counted)
	cut := ctx.Err() == nil && errors.Is(context.Cause(rctx), errCutoff)
	stop()
	if cut && reached.Load() == 0 && len(withoutCut(readErrs)) == 0 {
		readErrs, err = r.readContents(ctx, head, files, up, put)
		cut = false
	}
	return readErrs, cut, err
}

// isContextErr says whether err is a context's end, not an error of the
// read itself: a reader may return its context's cause (errCutoff).
func isContextErr(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, errCutoff)
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
// the deadline came while it was in flight, a retry it was owed would end
// after it (retry.PastDeadline), or the registry's rate window (or a 429's
// block) would let it go only after the deadline.
func timeUp(err error, deadline time.Time) bool {
	if deadline.IsZero() {
		return false
	}
	var cut *retry.PastDeadline
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &cut) {
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
