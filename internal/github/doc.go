// Package github is the source adapter: it reads what one branch of a GitHub
// repository holds (head commit, tree, compare, file contents) through
// go-github, and translates GitHub's errors into the policy sentinels
// (ErrConfig, ErrNotFound, ErrRateLimited, ErrCompareUntrusted) at this edge.
//
// Transient failures (network errors, timeouts, 5xx) are retried: one attempt
// plus one retry per Config.Backoff step (default 1s, 2s, 4s: at most four
// requests). 4xx answers and rate limits are never retried.
package github
