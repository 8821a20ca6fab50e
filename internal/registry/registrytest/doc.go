// Package registrytest helps test code that uses a registry.Store: the
// contract every backend must keep (RunContract), a deterministic clock, and
// Faulty, a wrapper that fails chosen keys or calls and records what was
// asked of the store.
package registrytest
