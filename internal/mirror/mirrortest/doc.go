// Package mirrortest holds the contract suite every mirror.Target must pass
// (Run) and an in-process S3 server to run it against (NewS3Server): the
// real S3 protocol of github.com/johannesboyne/gofakes3 on an httptest TLS
// server, behind a middleware that records every request and injects
// seeded faults — 5xx answers, slow answers and per-key errors inside a 200
// DeleteObjects answer — and that checks the Content-MD5 or checksum S3
// requires of DeleteObjects.
package mirrortest
