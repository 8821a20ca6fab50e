// Package registry is the policy registry: a key-value namespace behind the
// small Store port (memory for tests, bolt for the embedded file, Cloudflare
// Workers KV in production) and the Registry type that reads and writes the
// schema of docs/design.md ("Registry schema") on top of any Store.
//
// Every backend enforces Cloudflare's limits (CheckPair) so a key that would
// break them in production fails the same way on a laptop.
package registry
