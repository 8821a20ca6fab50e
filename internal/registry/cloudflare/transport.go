package cloudflare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/knue/syncjob/internal/policy"
)

// Log keys.
const (
	keyWait     = "wait"
	keyRequests = "requests"
	keyWindow   = "window"
	keyStatus   = "status"
	keyTry      = "try"
	keyError    = "error"
	keyMethod   = "method"
)

// Backoff bounds: the first retry waits about backoffBase, doubling up to
// backoffMax, each drawn in [d/2, d].
const (
	backoffBase = time.Second
	backoffMax  = 30 * time.Second
)

// window is a sliding-window limiter: at most n requests in any span of
// length w, so a burst may use the whole budget at once and waits only
// when the window is full. A 429's Retry-After pauses every caller.
type window struct {
	n     int
	w     time.Duration
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
	log   *slog.Logger

	mu     sync.Mutex
	stamps []time.Time // start times of the requests in the window, oldest first
	until  time.Time   // no request before this (a 429's Retry-After)
}

// wait blocks until a request may start and records it.
func (l *window) wait(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		l.mu.Lock()
		now := l.now()
		cut := 0
		for cut < len(l.stamps) && !l.stamps[cut].After(now.Add(-l.w)) {
			cut++
		}
		l.stamps = l.stamps[cut:]
		var d time.Duration
		switch {
		case now.Before(l.until):
			d = l.until.Sub(now)
		case len(l.stamps) >= l.n:
			d = l.stamps[0].Add(l.w).Sub(now)
		default:
			l.stamps = append(l.stamps, now)
			l.mu.Unlock()
			return nil
		}
		used := len(l.stamps)
		l.mu.Unlock()
		l.log.Info("waiting for the cloudflare rate window", keyWait, d.String(), keyRequests, used, keyWindow, l.w.String())
		if err := l.sleep(ctx, d); err != nil {
			return err
		}
	}
}

// pause makes every request wait until t.
func (l *window) pause(t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t.After(l.until) {
		l.until = t
	}
}

// transport is the single retry layer under cloudflare-go: every HTTP
// request waits for the window, is counted, and is retried on 429, 5xx,
// network errors and timeouts.
type transport struct {
	base       http.RoundTripper
	limiter    *window
	now        func() time.Time
	sleep      func(context.Context, time.Duration) error
	maxRetries int
	timeout    time.Duration
	log        *slog.Logger

	randMu sync.Mutex
	rand   *rand.Rand

	requests atomic.Int64
}

// attemptsError is the last failure of a request that was retried until
// the bound; it unwraps to that failure (a *policy.RateLimitError for 429s).
type attemptsError struct {
	tries int
	err   error
}

func (e *attemptsError) Error() string {
	return fmt.Sprintf("%v (%d tries)", e.err, e.tries)
}

func (e *attemptsError) Unwrap() error { return e.err }

// statusError is a 5xx answer.
type statusError struct{ status int }

func (e *statusError) Error() string {
	return fmt.Sprintf("HTTP %d %s", e.status, http.StatusText(e.status))
}

// RoundTrip implements http.RoundTripper.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	var last error
	for try := 0; ; try++ {
		if err := t.limiter.wait(ctx); err != nil {
			return nil, err
		}
		actx, cancel := context.WithTimeout(ctx, t.timeout)
		r := req.Clone(actx)
		if try > 0 && req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				cancel()
				return nil, &attemptsError{tries: try, err: last}
			}
			body, err := req.GetBody()
			if err != nil {
				cancel()
				return nil, err
			}
			r.Body = body
		}
		t.requests.Add(1)
		resp, err := t.base.RoundTrip(r)
		var retryAfter time.Duration
		status := 0
		switch {
		case err != nil:
			cancel()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				last = fmt.Errorf("no answer within %s", t.timeout)
			} else {
				last = err
			}
		case resp.StatusCode == http.StatusTooManyRequests:
			status = resp.StatusCode
			retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), t.now())
			discard(resp)
			cancel()
			rl := &policy.RateLimitError{API: "cloudflare", Kind: "api"}
			if retryAfter > 0 {
				rl.RetryAt = t.now().Add(retryAfter)
			}
			last = rl
		case resp.StatusCode >= http.StatusInternalServerError:
			status = resp.StatusCode
			discard(resp)
			cancel()
			last = &statusError{status: resp.StatusCode}
		default:
			resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
			return resp, nil
		}
		if try >= t.maxRetries {
			return nil, &attemptsError{tries: try + 1, err: last}
		}
		d := t.backoff(try, retryAfter)
		if retryAfter > 0 {
			t.limiter.pause(t.now().Add(d))
		}
		t.log.Warn("retrying cloudflare request", keyMethod, req.Method, keyStatus, status, keyError, last.Error(), keyTry, try+1, keyWait, d.String())
		if err := t.sleep(ctx, d); err != nil {
			return nil, err
		}
	}
}

// backoff returns how long to wait before retry try+1: Retry-After plus up
// to a tenth of it, else exponential backoff with jitter.
func (t *transport) backoff(try int, retryAfter time.Duration) time.Duration {
	t.randMu.Lock()
	defer t.randMu.Unlock()
	if retryAfter > 0 {
		return retryAfter + time.Duration(t.rand.Int64N(int64(retryAfter/10)+1))
	}
	d := backoffMax
	if try < 16 {
		d = min(backoffBase<<try, backoffMax)
	}
	return d/2 + time.Duration(t.rand.Int64N(int64(d/2)+1))
}

// parseRetryAfter reads Retry-After as seconds or an HTTP date; 0 when
// absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return at.Sub(now)
	}
	return 0
}

func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
}

// cancelOnClose releases a request's timeout once its body is read.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// sleepContext waits d or until ctx is done.
func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
