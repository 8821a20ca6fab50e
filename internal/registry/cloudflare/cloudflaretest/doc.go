// Package cloudflaretest is an httptest server that speaks the Cloudflare v4
// Workers KV endpoints syncjob and cloudflare-go v0 use (list keys, get value,
// get metadata, put value, bulk write, bulk delete, bulk get) with the v4
// envelope, and
// enforces Cloudflare's limits (key bytes, metadata bytes, bulk size, TTL, the
// bearer token) so that a test meets the same refusals as production.
//
// Faults are injected deterministically: queued for the next requests
// (FailNext), drawn at seeded rates (SetRates), or as partial bulk failures
// (FailKeys, FailKeyFraction) that report keys in "unsuccessful_keys" and do
// not write them. The clock is injectable, for expiry.
//
// Its own tests, which drive it with cloudflare-go, are the parent package's
// (fake_test.go, faults_test.go): one test binary for the Cloudflare edge.
package cloudflaretest
