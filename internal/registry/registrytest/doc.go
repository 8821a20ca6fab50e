// Package registrytest helps test code that uses a registry.Store: the
// contract every backend must keep (RunContract), a deterministic clock, and
// Faulty, a wrapper that fails chosen keys or calls and records what was
// asked of the store.
//
// Faulty's own tests are the registry package's (faulty_test.go,
// injected_test.go), beside the contract suite they run over every store.
package registrytest
