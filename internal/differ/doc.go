// Package differ decides what a run writes: the mode (ChooseMode), the plan
// of adds, updates, moves and deletes from the head of the repository (a
// full tree or an incremental changeset) and what the registry knows
// (FromTree, FromChanges, Plan), fitted to the queue (SettleQueue: retries,
// dead letters held back, requeues, drops), completed with what was read of
// each file (WithContent: titles, skips, failures), with legacy v1 fields
// carried (Migrate) and checked by the mass-delete guard (Guard). It is
// pure: no I/O, no SDKs, only domain types, so every planning rule is
// tested here without a network; internal/syncer only calls it.
package differ
