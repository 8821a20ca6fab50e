package cloudflare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/knue/syncjob/internal/redact"
	"github.com/knue/syncjob/internal/retry"
)

// transport is the single retry layer under cloudflare-go: every HTTP
// request waits for the rate window, is counted, has a timeout per try, and
// is retried on 429, 5xx, network errors and timeouts (see retry.go).
type transport struct {
	base    http.RoundTripper
	limiter *slidingWindow
	retries retry.Policy // RoundTrip adds the log line of each retry
	timeout time.Duration
	now     func() time.Time
	onWait  func(time.Duration, string) // Config.OnWait
	log     *slog.Logger
	secrets []string // the token and BaseURL's credentials: masked in logs and errors

	requests atomic.Int64
}

// newTransport builds the transport of cfg (after withDefaults) over base.
func newTransport(base http.RoundTripper, cfg Config, log *slog.Logger) *transport {
	if base == nil {
		base = pooledTransport()
	}
	return &transport{
		base: base,
		limiter: &slidingWindow{
			n: cfg.RequestsPerWindow, w: cfg.Window, now: cfg.Now, sleep: cfg.Sleep, log: log, onWait: cfg.OnWait,
		},
		retries: retryPolicy(cfg.MaxRetries, cfg.Sleep, cfg.Rand),
		timeout: cfg.RequestTimeout,
		now:     cfg.Now,
		onWait:  cfg.OnWait,
		log:     log,
		secrets: append([]string{cfg.APIToken}, redact.URLSecrets(cfg.BaseURL)...),
	}
}

// CloseIdleConnections closes the idle connections of the transport it
// wraps (http.Client.CloseIdleConnections asks only the transport it holds:
// this one): Store.Close.
func (t *transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// RoundTrip implements http.RoundTripper. A request retried until the bound
// fails with an *attemptsError; one whose body cannot be sent again stops
// at its first failure the same way. A bulk body encoded as it is sent
// (stream.go) is given its length and a way to be sent again.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = withStreamedBody(req)
	p := t.retries
	p.OnRetry = func(_ context.Context, r retry.Retry) { t.beforeRetry(req.Method, r) }
	tries := 0
	var last *failure
	resp, err := retry.Do(req.Context(), p, func(ctx context.Context) (*http.Response, error) {
		if err := t.limiter.wait(ctx); err != nil {
			return nil, err
		}
		if tries > 0 && !rewindable(req) {
			return nil, &attemptsError{tries: tries, err: last.err}
		}
		tries++
		resp, err := t.send(ctx, req, tries > 1)
		last, _ = err.(*failure) // send returns a failure as it is
		return resp, err
	})
	if errors.As(err, &last) {
		aerr := error(&attemptsError{tries: tries, err: last.err})
		if cut := (*retry.PastDeadline)(nil); errors.As(err, &cut) { // a retry would have ended after the deadline
			aerr = &retry.PastDeadline{Err: aerr, Wait: cut.Wait}
		}
		return nil, aerr
	}
	return resp, err
}

// send makes one try of req under its own timeout; again says an earlier
// try consumed the body. No answer, a 429 or a 5xx is a *failure; any other
// answer is the caller's, and closing its body releases the timeout.
func (t *transport) send(ctx context.Context, req *http.Request, again bool) (*http.Response, error) {
	tctx, cancel := context.WithTimeout(ctx, t.timeout)
	r := req.Clone(tctx)
	if again && hasBody(req) {
		body, err := req.GetBody()
		if err != nil {
			cancel()
			return nil, err
		}
		r.Body = body
	}
	t.requests.Add(1)
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		cancel()
		mayHaveApplied(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, &failure{err: fmt.Errorf("no answer within %s", t.timeout)}
		}
		return nil, &failure{err: err}
	}
	if f := t.failed(resp); f != nil {
		cancel()
		if f.status >= http.StatusInternalServerError {
			mayHaveApplied(ctx)
		}
		return nil, f
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	if resp.StatusCode < http.StatusMultipleChoices {
		// a 2xx whose body is cut (a reset after the headers) may have
		// applied the write: no answer says which (a reviewer)
		resp.Body = &cutAnswer{ReadCloser: resp.Body, ctx: ctx}
	}
	return resp, nil
}

// cutAnswer marks its request's try as one that may have applied
// unanswered (mayHaveApplied) when its body cannot be read to the end.
type cutAnswer struct {
	io.ReadCloser
	ctx    context.Context
	marked bool
}

func (c *cutAnswer) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	if err != nil && err != io.EOF && !c.marked {
		c.marked = true
		mayHaveApplied(c.ctx)
	}
	return n, err
}

// unansweredKey carries, in a bulk write's context, a count of its tries
// that Cloudflare may have applied, and billed, though no answer said so:
// no answer came (a reset connection, the deadline), or a 5xx did. A 429
// or another 4xx applied nothing.
type unansweredKey struct{}

// countUnanswered is ctx counting, in n, the tries of its request that may
// have been applied unanswered.
func countUnanswered(ctx context.Context, n *atomic.Int64) context.Context {
	return context.WithValue(ctx, unansweredKey{}, n)
}

func mayHaveApplied(ctx context.Context) {
	if n, ok := ctx.Value(unansweredKey{}).(*atomic.Int64); ok {
		n.Add(1)
	}
}

func hasBody(req *http.Request) bool { return req.Body != nil && req.Body != http.NoBody }

// rewindable says whether req can be sent again: it has no body, or a way
// to get its body anew.
func rewindable(req *http.Request) bool { return !hasBody(req) || req.GetBody != nil }

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

// maxIdlePerHost keeps as many connections to the API open between requests
// as a run has writes in flight (CONCURRENCY is at most 32): Go's default
// keeps 2, so a run with 16 batches in flight would open and close a TCP and
// TLS connection for most of its requests.
const maxIdlePerHost = 32

// pooledTransport is http.DefaultTransport keeping maxIdlePerHost idle
// connections to a host.
func pooledTransport() http.RoundTripper {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultTransport
	}
	t = t.Clone()
	t.MaxIdleConnsPerHost = maxIdlePerHost
	return t
}
