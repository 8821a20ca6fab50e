package github

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// What ends a watched request (see watched).
var (
	errStalled = errors.New("download stalled")
	errTooLong = errors.New("download took too long")
)

// watch bounds one request: its context ends when the overall bound
// passes, or when the request makes no progress for idle (from its start
// to the first byte of the body, then between reads).
type watch struct {
	idle        time.Duration
	timer       *time.Timer
	cancel      context.CancelCauseFunc
	cancelBound context.CancelFunc
}

// watched returns ctx bounded by bound (0: no bound of its own) and by the
// idle timeout. Call stop when the request is done.
func (s *Source) watched(ctx context.Context, bound time.Duration) (context.Context, *watch) {
	w := &watch{idle: s.idle, cancelBound: func() {}}
	if bound > 0 {
		ctx, w.cancelBound = context.WithTimeoutCause(ctx, bound, errTooLong)
	}
	ctx, w.cancel = context.WithCancelCause(ctx)
	w.timer = time.AfterFunc(w.idle, func() { w.cancel(errStalled) })
	return ctx, w
}

func (w *watch) stop() {
	w.timer.Stop()
	w.cancel(nil)
	w.cancelBound()
}

// body is r, each read that brings bytes restarting the idle timeout.
func (w *watch) body(r io.Reader) io.Reader { return &watchedBody{r: r, w: w} }

type watchedBody struct {
	r io.Reader
	w *watch
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if n > 0 {
		b.w.timer.Reset(b.w.idle)
	}
	return n, err
}

// why returns err told by what ended ctx when the watch did (errStalled,
// errTooLong), else err itself.
func (w *watch) why(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errStalled):
		return fmt.Errorf("%w: no progress for %s", errStalled, w.idle)
	case errors.Is(cause, errTooLong):
		return cause
	}
	return err
}
