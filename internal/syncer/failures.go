package syncer

import (
	"context"
	"errors"
	"slices"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// retried is what the record-failures step did.
type retried struct {
	// owed are the names the next run must look at again.
	owed []string
	// newlyDead are the versions this run gave up on: held back from now.
	newlyDead []policy.Skip
	err       error // failures that could not be recorded for retry
}

// recordFailures is the record-failures step: for every failed add, update
// or delete of the plan as planned (titled, the plan with its titles, and
// unread, the planned items whose files could not be read, which the
// titles step dropped: see differ.Titling), it writes its queue entry with one
// more failure, or its dead letter at the last one (differ.RecordFailures
// decides which). A run whose deadline has passed still records them
// (afterDeadline).
func (r *run) recordFailures(ctx context.Context, titled, unread policy.Plan, failures []policy.Failure, pending map[string]policy.QueueEntry) *retried {
	if len(failures) == 0 {
		return &retried{owed: []string{}}
	}
	ctx, cancel := afterDeadline(ctx)
	defer cancel()
	// an unread item wins over a migration of its name the titles step added
	planned := policy.Plan{Items: append(slices.Clip(titled.Items), unread.Items...)}
	rec := differ.RecordFailures(planned, failures, pending, r.attempt(), r.start)
	var writes []registry.Write
	for _, rt := range rec.Retries {
		name := rt.Entry.PolicyName
		if rt.Dead != nil {
			r.log.Error("dead letter", logkey.Policy, name, logkey.Error, rt.Cause, logkey.RetryCount, rt.Entry.RetryCount)
			writes = append(writes, registry.PutDeadLetter(*rt.Dead), registry.DeleteQueue(name))
			continue
		}
		r.log.Warn("failure queued for retry", logkey.Policy, name, logkey.RetryCount, rt.Entry.RetryCount)
		writes = append(writes, registry.PutQueue(rt.Entry))
	}
	var errs []error
	for batch := range slices.Chunk(writes, r.opt.BatchSize) {
		if failed := r.Registry.Write(ctx, batch...); len(failed) > 0 {
			errs = append(errs, &registry.BatchError{Op: "record failures", Failed: failed})
		}
	}
	return &retried{owed: rec.Owed, newlyDead: rec.HeldBack, err: errors.Join(errs...)}
}
