// Package syncer runs one sync. Syncer.Run (run.go) reads top to bottom:
// read the state (state.go; push.go waits for a webhook's push), choose the
// mode (differ.ChooseMode), take the single-writer lease (early.go, with
// the reads it starts beside it; lease.go), read what the plan needs
// (stale.go, waiting out a lagging registry's window when owed; read.go),
// plan (plan.go, through internal/differ), read titles (titles.go), guard
// (differ.GuardWithin), fit the daily write budget
// (budget.go), apply in bounded concurrent batches (apply.go), record
// failures for retry (failures.go) and record the run (record.go). Each
// step takes and returns values; planning is pure, in internal/differ.
// cmd/syncjob and the Lambda handler both call Run.
package syncer
