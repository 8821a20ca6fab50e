// Package scalebench is the scale bench of docs/bench.md: the syncjob
// binary, as a child process, against the fake GitHub and the fake
// Cloudflare behind proxies that add latency to every request. It holds
// tests only; BenchmarkScale runs with -bench alone.
package scalebench

// The fake Cloudflare account of the bench.
const (
	cfAccountID   = "0123456789abcdef0123456789abcdef"
	cfNamespaceID = "fedcba9876543210fedcba9876543210"
	cfToken       = "cfut_SECRETSECRETSECRET0123456789abcdefXYZ"
	cfSeed        = 20261125
)
