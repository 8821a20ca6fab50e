package github

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"syscall"
	"time"

	gh "github.com/google/go-github/v66/github"

	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/retry"
)

// MaxRateLimitWait bounds the secondary rate limits waited out inside a
// run: one that asks for this long or less (GitHub often says exactly
// Retry-After: 60) is waited out; a longer one, or a primary limit, ends
// the run with the time to retry.
const MaxRateLimitWait = 60 * time.Second

// retryPolicy retries a transient failure (see retryable) after each wait of
// backoff in turn, and a short secondary rate limit after the wait it asks
// for (see classify): len(backoff) retries at most. retry.Do does not start
// a wait that would pass the context's deadline.
func (s *Source) retryPolicy(sleep func(context.Context, time.Duration) error, backoff []time.Duration) retry.Policy {
	return retry.Policy{
		MaxRetries: len(backoff),
		Wait: func(n int, after time.Duration) time.Duration {
			if after > 0 {
				return after
			}
			return backoff[n]
		},
		Classify: s.classify,
		Sleep:    sleep,
	}
}

// classify retries transient failures and secondary rate limits that ask
// for MaxRateLimitWait or less.
func (s *Source) classify(err error) retry.Decision {
	if rateLimitOf(err, s.now()) == nil {
		return retry.Decision{Retry: retryable(err)}
	}
	if d, ok := secondaryWait(err, s.now()); ok && d <= MaxRateLimitWait {
		return retry.Decision{Retry: true, After: d}
	}
	return retry.Decision{}
}

// secondaryWait is the wait a secondary rate limit asks for: go-github's
// Retry-After (exact; it also answers locally while a limit it saw lasts),
// else the answer's Retry-After header. ok is false for a primary limit and
// for a secondary one that names no wait.
func secondaryWait(err error, now time.Time) (d time.Duration, ok bool) {
	if rl := rateLimitOf(err, now); rl == nil || rl.Kind != "secondary" {
		return 0, false
	}
	var abuse *gh.AbuseRateLimitError
	if errors.As(err, &abuse) {
		if abuse.RetryAfter == nil {
			return 0, false
		}
		return max(*abuse.RetryAfter, 0), true
	}
	h := headerOf(err)
	if h.Get("Retry-After") == "" {
		return 0, false
	}
	return retry.After(h.Get("Retry-After"), now), true
}

// do runs call, retrying transient failures after the backoff waits. It
// returns the last error untranslated.
func (s *Source) do(ctx context.Context, op string, call func(ctx context.Context) (*gh.Response, error)) error {
	p := s.retries
	p.OnRetry = func(ctx context.Context, r retry.Retry) {
		s.log.WarnContext(ctx, "retrying request", logkey.Op, op, logkey.Attempt, r.N, logkey.Wait, r.Wait, logkey.Error, s.maskedText(r.Err.Error()))
	}
	_, err := retry.Do(ctx, p, call)
	return err
}

// retryable: network errors, timeouts and stalls, 5xx and corrupt bodies;
// never 4xx, rate limits (a rate limit ends the run with the time to retry:
// see rateLimitOf) or a failure marked final.
func retryable(err error) bool {
	var f *final
	if errors.As(err, &f) {
		return false
	}
	var rl *gh.RateLimitError
	var abuse *gh.AbuseRateLimitError
	if errors.As(err, &rl) || errors.As(err, &abuse) {
		return false
	}
	if st := statusOf(err); st != 0 {
		return st >= 500
	}
	if unreachable(err) {
		return false
	}
	var netErr net.Error
	var urlErr *url.Error
	return errors.As(err, &netErr) || errors.As(err, &urlErr) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, errCorrupt) || errors.Is(err, errStalled)
}

// unreachable reports a failure to reach GitHub at all: a name that does
// not resolve, or a host that refuses or cannot be routed to. Seconds of
// retries do not bring a network back; the run fails at once and says so.
func unreachable(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return !dns.IsTimeout
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.EHOSTUNREACH)
}

// final marks a failure that is not retried.
type final struct{ err error }

func (f *final) Error() string { return f.err.Error() }
func (f *final) Unwrap() error { return f.err }
