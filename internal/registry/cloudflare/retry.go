package cloudflare

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/redact"
	"github.com/knue/syncjob/internal/retry"
)

// Backoff bounds: the first retry waits about backoffBase, doubling up to
// backoffMax, each drawn in [d/2, d].
const (
	backoffBase = time.Second
	backoffMax  = 30 * time.Second
)

// blockedFor is how long Cloudflare blocks a token that passed its API
// limit (1,200 requests per 5 minutes): the wait a 429 without
// Retry-After stands for.
const blockedFor = 5 * time.Minute

// retryPolicy retries a failed try (see failure) up to maxRetries times:
// after a 429's Retry-After plus up to a tenth, else after jittered
// exponential backoff drawn from r.
func retryPolicy(maxRetries int, sleep func(context.Context, time.Duration) error, r *rand.Rand) retry.Policy {
	return retry.Policy{
		MaxRetries: maxRetries,
		Wait:       retry.Jittered(backoffBase, backoffMax, r),
		Classify:   classify,
		Sleep:      sleep,
	}
}

// classify retries every failure: no answer, a 429 (after its Retry-After)
// or a 5xx; nothing else.
func classify(err error) retry.Decision {
	var f *failure
	if errors.As(err, &f) {
		return retry.Decision{Retry: true, After: f.retryAfter}
	}
	return retry.Decision{}
}

// beforeRetry holds every caller back for as long as a 429 asked (the
// wait, jitter included), and says that a request is retried.
func (t *transport) beforeRetry(method string, r retry.Retry) {
	if r.After > 0 {
		t.limiter.pause(t.now().Add(r.Wait))
	}
	status := 0
	var f *failure
	if errors.As(r.Err, &f) {
		status = f.status
	}
	if status == http.StatusTooManyRequests {
		t.onWait(r.Wait, Wait429)
	}
	t.log.Warn("retrying cloudflare request", logkey.Method, method, logkey.Status, status, logkey.Error, redact.String(r.Err.Error(), t.secrets...), logkey.Attempt, r.N, logkey.Wait, r.Wait.String())
}

// failure is a try that may be retried: no answer (a network error, a
// timeout), a 429 or a 5xx.
type failure struct {
	err        error         // *policy.RateLimitError for a 429, *statusError for a 5xx, else why no answer came
	status     int           // 0 when no answer came
	retryAfter time.Duration // a 429's Retry-After; 0 when absent
}

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// failed reads a 429 or a 5xx answer as a failure, its body read and
// closed; nil for any other answer. A 429 blocks the token (for its
// Retry-After, else blockedFor): every caller is held back until then,
// whether or not this request is retried.
func (t *transport) failed(resp *http.Response) *failure {
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		after := blockedFor
		if v := resp.Header.Get("Retry-After"); v != "" {
			after = retry.After(v, t.now())
		}
		discard(resp)
		rl := &policy.RateLimitError{API: "cloudflare", Kind: "api", RetryAt: t.now().Add(after)}
		t.limiter.pause(rl.RetryAt)
		return &failure{err: rl, status: resp.StatusCode, retryAfter: after}
	case resp.StatusCode >= http.StatusInternalServerError:
		discard(resp)
		return &failure{err: &statusError{status: resp.StatusCode}, status: resp.StatusCode}
	}
	return nil
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
