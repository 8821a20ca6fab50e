// Package differ decides what a run writes: the mode (ChooseMode), what to
// read (ReadScope, TreeNeeded), the plan of adds, updates, moves and deletes
// from the head of the repository (PlanFull from the tree, PlanIncremental
// from a changeset) and what the registry knows, fitted to the queue
// (SettleQueue: retries, dead letters held back, requeues, drops),
// completed with what was read of each file (Titling, in the plan's own
// items as the read delivers them; WithContent on a copy: titles, skips,
// failures), with legacy v1 fields carried (Migrate, LegacyLeft), checked by
// the mass-delete guard (Guard), fitted to the daily write budget
// (FitBudget), and what to record of failed items (RecordFailures: owed or
// dead). It is pure: no I/O, no SDKs, only domain types and the queue's
// rules, so every planning rule is tested here without a network;
// internal/syncer only calls it.
package differ
