package cloudflare

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// RecordMargin is how many requests past the window a run's record may
// make (registry.Recording): its history and lastRun, lastCommit with the
// lease's release, a few retries. Cloudflare's own limit is 200 higher.
const RecordMargin = 20

// slidingWindow is the rate limiter every request waits for: at most n
// requests in any span of length w, so a burst may use the whole budget at
// once and waits only when the window is full. A 429's Retry-After pauses
// every caller (see pause).
type slidingWindow struct {
	n     int
	w     time.Duration
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
	log   *slog.Logger
	// onWait hears each wait before it starts (Config.OnWait)
	onWait func(d time.Duration, why string)

	mu     sync.Mutex
	stamps []time.Time // start times of the requests in the window, oldest first
	until  time.Time   // no request before this (a 429's Retry-After)
}

// wait blocks until a request may start and records it. A wait that
// would pass ctx's deadline is not started: it fails at once with a
// *policy.RateLimitError saying when a request may start, so that the run
// can still record why it stopped.
func (l *slidingWindow) wait(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := l.n
		if registry.IsRecording(ctx) {
			n += RecordMargin // a run's record goes beyond the window (registry.Recording)
		}
		d, used, paused, ok := l.take(n)
		if ok {
			return nil
		}
		if deadline, has := ctx.Deadline(); has && d > time.Until(deadline) {
			return &policy.RateLimitError{API: "cloudflare", Kind: "api", RetryAt: l.now().Add(d)}
		}
		why := WaitRateWindow
		if paused {
			why = Wait429
		} else {
			l.log.Info("waiting for the cloudflare rate window", logkey.Wait, d.String(), logkey.Requests, used, logkey.Window, l.w.String())
		}
		l.onWait(d, why)
		if err := l.sleep(ctx, d); err != nil {
			return err
		}
	}
}

// take records a request starting now when the window allows it (ok);
// else it says how long to wait, how many requests the window holds, and
// whether a 429's pause (not the window) holds it.
func (l *slidingWindow) take(n int) (wait time.Duration, used int, paused, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	cut := 0
	for cut < len(l.stamps) && !l.stamps[cut].After(now.Add(-l.w)) {
		cut++
	}
	l.stamps = l.stamps[cut:]
	switch {
	case now.Before(l.until):
		return l.until.Sub(now), len(l.stamps), true, false
	case len(l.stamps) >= n:
		return l.stamps[0].Add(l.w).Sub(now), len(l.stamps), false, false
	}
	l.stamps = append(l.stamps, now)
	return 0, len(l.stamps), false, true
}

// pause makes every request wait until t.
func (l *slidingWindow) pause(t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t.After(l.until) {
		l.until = t
	}
}
