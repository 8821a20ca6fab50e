package github

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"time"

	gh "github.com/google/go-github/v66/github"

	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/retry"
)

// retryPolicy retries a transient failure (see retryable) after each wait of
// backoff in turn: len(backoff) retries at most.
func retryPolicy(sleep func(context.Context, time.Duration) error, backoff []time.Duration) retry.Policy {
	return retry.Policy{
		MaxRetries: len(backoff),
		Wait:       retry.Fixed(backoff),
		Classify:   func(err error) retry.Decision { return retry.Decision{Retry: retryable(err)} },
		Sleep:      sleep,
	}
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
	var netErr net.Error
	var urlErr *url.Error
	return errors.As(err, &netErr) || errors.As(err, &urlErr) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, errCorrupt) || errors.Is(err, errStalled)
}

// final marks a failure that is not retried.
type final struct{ err error }

func (f *final) Error() string { return f.err.Error() }
func (f *final) Unwrap() error { return f.err }
