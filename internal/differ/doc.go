// Package differ decides what a run writes: it turns the head of the
// repository (a full tree or an incremental changeset) and what the registry
// knows into a policy.Plan of adds, updates, moves and deletes. It is pure: no
// I/O, no SDKs, only domain types, so every rule of DESIGN.md "One run" step 3
// is tested here without a network.
package differ
