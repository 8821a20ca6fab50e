// Package cloudflare is the production registry.Store: a Workers KV
// namespace reached through the Cloudflare v4 REST API with cloudflare-go v0,
// in the fewest requests the API allows (bulk writes and deletes, listings
// that carry metadata, never one request per key where a batch will do).
//
// It is the single retry layer. cloudflare-go v0 retries 429s and 5xx itself,
// but without jitter, without reading Retry-After, and it then returns an
// untyped error (its *RatelimitError is unreachable for 429s); its limiter is a
// 4 requests/second trickle that does not model the real budget of 1,200
// requests per 5 minutes and cannot take an injected clock. So the client is
// built with UsingRetryPolicy(0, 0, 0) and an unlimited UsingRateLimit, and
// every HTTP request goes through this package's transport: a sliding-window
// limiter (RequestsPerWindow per Window, default 1,000 of Cloudflare's 1,200,
// leaving room for other users of the token), then bounded retries with
// jittered exponential backoff that honour Retry-After, on 429, 5xx, network
// errors and timeouts. The retry loop is internal/retry's, shared with the
// GitHub adapter; what is retried, and how long to wait, is decided here.
// A 429 blocks the whole token (Cloudflare: for five minutes, Retry-After
// says how long; five minutes when it does not): every caller is held back
// until then, and a wait that would pass the context's deadline is not
// started, the request failing at once with a *policy.RateLimitError whose
// RetryAt says when, so the run can still record its failure.
// Keys a bulk answer lists in unsuccessful_keys are re-sent, alone, after
// 1 s, 2 s and 4 s (KV writes one key at most once a second) before they
// count as failed.
// Errors are typed at this edge (see Store).
//
// Values are sent as JSON strings when they are valid UTF-8 and no longer
// so than base64-encoded (text is a third smaller), and with "base64": true
// otherwise (asBase64). Deletes use
// the current endpoint POST .../bulk/delete (cloudflare-go v0.119 still calls
// the older DELETE .../bulk). Writes counts billable writes (each pair a bulk
// write applied, or that may have been, unanswered) and Deletes billable deletes: Cloudflare bills deletes on
// their own line (1,000 a day on the free plan, like writes), not as writes.
package cloudflare
