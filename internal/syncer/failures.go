package syncer

import (
	"context"
	"errors"
	"maps"
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
	var puts []registry.Write
	var dead []differ.Retry
	for _, rt := range rec.Retries {
		name := rt.Entry.PolicyName
		if rt.Dead != nil {
			r.log.Error("dead letter", logkey.Policy, name, logkey.Error, rt.Cause, logkey.RetryCount, rt.Entry.RetryCount)
			puts, dead = append(puts, registry.PutDeadLetter(*rt.Dead)), append(dead, rt)
			continue
		}
		r.log.Warn("failure queued for retry", logkey.Policy, name, logkey.RetryCount, rt.Entry.RetryCount)
		puts = append(puts, registry.PutQueue(rt.Entry))
	}
	failed, errs := r.writeRecords(ctx, puts, nil)
	// A queue entry goes once its dead letter landed; else it records the
	// count (the announcement wrote it afresh), so that the next failure
	// makes the dead letter (review: the entry went with the dead letter
	// lost, and the count restarted at one).
	var then []registry.Write
	for _, rt := range dead {
		name := rt.Entry.PolicyName
		if _, bad := failed[registry.DeadLetterKey(name)]; bad {
			then = append(then, registry.PutQueue(rt.Entry))
		} else {
			then = append(then, registry.DeleteQueue(name))
		}
	}
	_, errs = r.writeRecords(ctx, then, errs)
	held := slices.DeleteFunc(rec.HeldBack, func(s policy.Skip) bool { // only a dead letter that landed holds back
		_, bad := failed[registry.DeadLetterKey(s.PolicyName)]
		return bad
	})
	return &retried{owed: rec.Owed, newlyDead: held, err: errors.Join(errs...)}
}

// writeRecords writes the record-failures step's writes in batches, and
// returns the keys that failed, with errs grown by an error per failed
// batch.
func (r *run) writeRecords(ctx context.Context, writes []registry.Write, errs []error) (map[string]error, []error) {
	all := map[string]error{}
	for batch := range slices.Chunk(writes, r.opt.BatchSize) {
		if failed := r.Registry.Write(ctx, batch...); len(failed) > 0 {
			maps.Copy(all, failed)
			errs = append(errs, &registry.BatchError{Op: "record failures", Failed: failed})
		}
	}
	return all, errs
}
