// Package github is the source adapter: it reads what one branch of a GitHub
// repository holds (head commit, tree, compare, file contents) through
// go-github, and translates GitHub's errors into the policy sentinels
// (ErrConfig, ErrNotFound, ErrRateLimited, ErrCompareUntrusted) at this edge.
//
// Transient failures (network errors, timeouts, stalled downloads, 5xx) are
// retried: one attempt plus one retry per Config.Backoff step (default 1s,
// 2s, 4s: at most four requests). A secondary rate limit that asks for less
// than MaxRateLimitWait (60 s) is waited out the same way, within those
// retries and only while the context's deadline allows; a primary limit, a
// longer wait, and other 4xx answers are not retried.
//
// File contents are streamed (Source.Titles): never more than the size
// limit plus one byte of a file is read, and a tarball is inflated only up
// to a budget: what the commit's tree says it holds (Source.Tree), at
// least Config.ArchiveSlack beyond the wanted files.
package github
