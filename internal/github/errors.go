package github

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v66/github"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/retry"
)

// statusError is a non-success answer to a request go-github does not check
// itself (the archive link and download).
type statusError struct {
	status  int
	header  http.Header
	message string
}

func (e *statusError) Error() string {
	msg := strconv.Itoa(e.status) + " " + http.StatusText(e.status)
	if e.message != "" {
		msg += ": " + e.message
	}
	return msg
}

// statusOf is the HTTP status of an error answer, 0 when there was none.
func statusOf(err error) int {
	var er *gh.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	var rl *gh.RateLimitError
	if errors.As(err, &rl) && rl.Response != nil {
		return rl.Response.StatusCode
	}
	var abuse *gh.AbuseRateLimitError
	if errors.As(err, &abuse) && abuse.Response != nil {
		return abuse.Response.StatusCode
	}
	var se *statusError
	if errors.As(err, &se) {
		return se.status
	}
	return 0
}

// rateLimitOf recognises GitHub's rate-limit answers, primary and secondary,
// as 403 or 429, typed by go-github or not (it does not type a 429).
func rateLimitOf(err error, now time.Time) *policy.RateLimitError {
	var rl *gh.RateLimitError
	if errors.As(err, &rl) {
		e := &policy.RateLimitError{API: "github", Kind: "primary", RetryAt: rl.Rate.Reset.Time}
		if e.RetryAt.IsZero() && rl.Response != nil {
			e.RetryAt = resetAt(rl.Response.Header)
		}
		return e
	}
	var abuse *gh.AbuseRateLimitError
	if errors.As(err, &abuse) {
		e := &policy.RateLimitError{API: "github", Kind: "secondary"}
		if abuse.RetryAfter != nil {
			e.RetryAt = now.Add(*abuse.RetryAfter).Truncate(time.Second)
		}
		return e
	}
	var (
		status int
		header http.Header
		msg    string
	)
	var er *gh.ErrorResponse
	var se *statusError
	switch {
	case errors.As(err, &er) && er.Response != nil:
		status, header, msg = er.Response.StatusCode, er.Response.Header, er.Message
	case errors.As(err, &se):
		status, header, msg = se.status, se.header, se.message
	default:
		return nil
	}
	if status != http.StatusForbidden && status != http.StatusTooManyRequests {
		return nil
	}
	msg = strings.ToLower(msg)
	retryAfter := header.Get("Retry-After")
	switch {
	case header.Get("X-RateLimit-Remaining") == "0":
		return &policy.RateLimitError{API: "github", Kind: "primary", RetryAt: resetAt(header)}
	case retryAfter != "" || strings.Contains(msg, "secondary rate limit") || strings.Contains(msg, "abuse"):
		e := &policy.RateLimitError{API: "github", Kind: "secondary", RetryAt: resetAt(header)}
		if at, ok := retry.At(retryAfter, now); ok {
			e.RetryAt = at.Truncate(time.Second)
		}
		return e
	case strings.Contains(msg, "rate limit"):
		return &policy.RateLimitError{API: "github", Kind: "primary", RetryAt: resetAt(header)}
	case status == http.StatusTooManyRequests:
		return &policy.RateLimitError{API: "github", Kind: "secondary"}
	}
	return nil
}

// headerOf is the headers of an error answer, none when there was none.
func headerOf(err error) http.Header {
	var er *gh.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.Header
	}
	var se *statusError
	if errors.As(err, &se) {
		return se.header
	}
	return http.Header{}
}

func resetAt(h http.Header) time.Time {
	if v, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil && v > 0 {
		return time.Unix(v, 0).UTC()
	}
	return time.Time{}
}

// translate turns a go-github or transport error into the policy sentinels,
// wrapped "github: {op}: ...".
func (s *Source) translate(op string, err error) error {
	if rl := rateLimitOf(err, s.now()); rl != nil {
		if cut := (*retry.PastDeadline)(nil); errors.As(err, &cut) { // a wait the run would take, cut by its deadline
			return s.masked(fmt.Errorf("github: %s: %w", op, &retry.PastDeadline{Err: rl, Wait: cut.Wait}))
		}
		return s.masked(fmt.Errorf("github: %s: %w", op, rl))
	}
	switch statusOf(err) {
	case http.StatusUnauthorized:
		return s.masked(fmt.Errorf("github: %s: bad credentials (check GITHUB_TOKEN): %w", op, policy.ErrConfig))
	case http.StatusForbidden:
		return s.masked(fmt.Errorf("github: %s: access forbidden: %w: %w", op, policy.ErrConfig, err))
	case http.StatusNotFound:
		return s.masked(fmt.Errorf("github: %s: %w: %w", op, policy.ErrNotFound, err))
	}
	return s.masked(fmt.Errorf("github: %s: %w", op, concise(err)))
}

// httpError is a GitHub error answer told briefly: the operation already
// names the resource, so the method, URL and empty error list go.
type httpError struct {
	status  int
	message string
	err     error
}

func (e *httpError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.status, e.message) }
func (e *httpError) Unwrap() error { return e.err }

func concise(err error) error {
	var er *gh.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil {
		return err
	}
	msg := er.Message
	if msg == "" {
		msg = http.StatusText(er.Response.StatusCode)
	}
	return &httpError{status: er.Response.StatusCode, message: msg, err: err}
}
