package cloudflare

import (
	"context"
	"errors"
	"fmt"

	cf "github.com/cloudflare/cloudflare-go"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/redact"
	"github.com/knue/syncjob/internal/retry"
)

// ErrUnsuccessful fails a key that Cloudflare listed in a bulk answer's
// unsuccessful_keys every time it was sent (the first request and the
// re-sends): it was not written (or deleted) everywhere and should be
// retried by a later run.
var ErrUnsuccessful = errors.New("cloudflare reported the key unsuccessful")

// codeKeyNotFound is Cloudflare's error code for a missing key (404).
const codeKeyNotFound = 10009

// edge translates an error of cloudflare-go (and of the transport under it)
// into the sentinels of package policy, with the API token and any
// credentials written into BaseURL scrubbed from its text: Cloudflare's
// answers can echo what they were sent, and transport errors the URL.
func (s *Store) edge(ctx context.Context, err error) error {
	return redact.Error(s.translate(ctx, err), s.rt.secrets...)
}

func (s *Store) translate(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if cut := (*retry.PastDeadline)(nil); errors.As(err, &cut) { // kept: the run waits, counting no failure
		return &retry.PastDeadline{Err: s.translate(ctx, cut.Err), Wait: cut.Wait}
	}
	var tries *attemptsError
	if errors.As(err, &tries) {
		return tries
	}
	var limited *policy.RateLimitError // not sent: the rate window or a 429's block
	if errors.As(err, &limited) {
		return limited
	}
	var unauthorized *cf.AuthorizationError // 401
	var forbidden *cf.AuthenticationError   // 403
	if errors.As(err, &unauthorized) || errors.As(err, &forbidden) {
		return fmt.Errorf("CLOUDFLARE_API_TOKEN refused for CLOUDFLARE_ACCOUNT_ID %s (want a token with Workers KV Storage edit on that account) (%v): %w", s.cfg.AccountID, err, policy.ErrConfig)
	}
	var bad *cf.RequestError // 400
	if errors.As(err, &bad) && (bad.InternalErrorCodeIs(codeInvalidHeaders) || bad.InternalErrorCodeIs(codeInvalidToken)) {
		return fmt.Errorf("CLOUDFLARE_API_TOKEN is not an API token Cloudflare can read (a Global API Key, or cut or padded?) (%v): %w", err, policy.ErrConfig)
	}
	var notFound *cf.NotFoundError
	if errors.As(err, &notFound) {
		if notFound.InternalErrorCodeIs(codeKeyNotFound) {
			return fmt.Errorf("%v: %w", err, policy.ErrNotFound)
		}
		return fmt.Errorf("CLOUDFLARE_KV_NAMESPACE_ID %s not found in CLOUDFLARE_ACCOUNT_ID %s (%v): %w", s.cfg.NamespaceID, s.cfg.AccountID, err, policy.ErrConfig)
	}
	return err
}

// Cloudflare's error codes for a token it cannot read: a 400 "Invalid
// request headers" (6003), whose chain says "Invalid format for
// Authorization header" (6111), as for a Global API Key given as a token
// (review).
const (
	codeInvalidHeaders = 6003
	codeInvalidToken   = 6111
)
