// Package webhook decides what to do with a GitHub webhook delivery: it
// refuses what is too large or not a POST, verifies the X-Hub-Signature-256
// HMAC before reading anything else, and tells a push to the synced branch
// from everything else. It does no I/O: the caller reads the secret, starts
// the sync and writes the answer.
package webhook
