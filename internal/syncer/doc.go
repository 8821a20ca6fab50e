// Package syncer runs one sync. Syncer.Run reads top to bottom in
// syncer.go: read the state (state.go), choose the mode and plan (plan.go,
// through internal/differ), guard and budget (budget.go), read titles
// (titles.go), apply in bounded concurrent batches (apply.go), record
// failures for retry (queue.go) and record the run (record.go), under the
// single-writer lease (lease.go). Each step takes and returns values.
// cmd/syncjob and the Lambda handler both call Run.
package syncer
