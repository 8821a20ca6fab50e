// Package syncer runs one sync: it reads the branch head and the registry,
// decides the mode (full or incremental), asks the differ for a plan, reads
// the content it needs, applies the plan in bounded concurrent batches and
// records the run. cmd/syncjob and the Lambda handler both call Run.
package syncer
