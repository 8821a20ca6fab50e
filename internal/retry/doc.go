// Package retry is the one retry mechanism of syncjob's HTTP adapters: Do
// runs an operation until it succeeds, a failure is final, the retries run
// out or the context ends. Each adapter brings its own Policy: a classifier
// that says which failures are transient (and whether the server named a
// wait, Retry-After), a Schedule of waits, and a bound.
//
// It is a small hand-written loop rather than cenkalti/backoff: the adapters'
// tests inject the sleep (a func(ctx, d) error that may itself end the loop)
// and the jitter's *rand.Rand, and a server's Retry-After must replace the
// computed wait for one retry only. backoff/v4 and v5 draw jitter from the
// global source, sleep through a timer channel, and take Retry-After only as
// whole seconds from a special error, so fitting them would add code, not
// delete it.
package retry
