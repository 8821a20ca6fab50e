package syncer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/queue"
	"github.com/knue/syncjob/internal/registry"
)

// pendingRetries returns the failed writes of earlier runs that the sync
// still owes: failed queue entries whose registry entry does not hold their
// version. Entries a worker failed (the registry holds their version) are
// the worker's, not the sync's.
func (r *run) pendingRetries(ctx context.Context) (map[string]policy.QueueEntry, error) {
	failed, err := r.Registry.FailedQueue(ctx)
	var bad *registry.DecodeError
	if errors.As(err, &bad) {
		r.log.Warn("queue entries unreadable", KeyError, err)
	} else if err != nil {
		return nil, fmt.Errorf("registry: read queue: %w", err)
	}
	pending := map[string]policy.QueueEntry{}
	for name, q := range failed {
		cur, present, err := r.Registry.Policy(ctx, name)
		if errors.As(err, &bad) {
			// unreadable: the retried write replaces it
			r.log.Warn("registry entry unreadable", KeyPolicy, name, KeyError, err)
			present = false
		} else if err != nil {
			return nil, err
		}
		if queue.SyncPending(q, cur, present) {
			pending[name] = q
		}
	}
	return pending, nil
}

// settleQueue fits the plan to the queue: a retried name that the head
// deleted gets a delete (its queue entry goes, nothing is resurrected); one
// whose registry entry already matches the head gets its queue entry
// rewritten clean; a dead letter's version is held back until a person
// retries it (another version of the same policy goes ahead).
func (r *run) settleQueue(plan policy.Plan, desired map[string]policy.Desired, entries map[string]policy.Entry) policy.Plan {
	planned := map[string]bool{}
	for _, it := range plan.Items {
		planned[it.PolicyName] = true
	}
	skipped := map[string]bool{}
	for _, sk := range plan.Skipped {
		skipped[sk.PolicyName] = true
	}
	for _, name := range slices.Sorted(maps.Keys(r.pending)) {
		q := r.pending[name]
		switch d, want := desired[name]; {
		case planned[name]:
		case skipped[name]:
			// the head's version is skipped (empty, too large): the sync
			// owes this entry nothing any more
			r.dropQueue = append(r.dropQueue, name)
		case !want:
			plan.Items = append(plan.Items, policy.Item{Action: policy.ActDelete, PolicyName: name, OldSHA: entries[name].SHA, OldPath: entries[name].Path})
		default:
			op := q.Operation
			if op == queue.OpDelete {
				op = policy.OpUpdate
			}
			r.requeue = append(r.requeue, policy.QueueEntry{PolicyName: name, SHA: d.SHA, Operation: op, CreatedAt: r.start.Format(timeLayout)})
		}
	}
	plan.Items = slices.DeleteFunc(plan.Items, func(it policy.Item) bool {
		dl, ok := r.dead[it.PolicyName]
		if !ok {
			return false
		}
		held := (it.Action == policy.ActDelete && dl.Operation == queue.OpDelete) ||
			(it.Action != policy.ActDelete && dl.Operation != queue.OpDelete && dl.SHA == it.SHA)
		if held {
			plan.Skipped = append(plan.Skipped, policy.Skip{PolicyName: it.PolicyName, Path: it.Path, Reason: "dead letter (syncjob deadletter retry " + it.PolicyName + ")"})
		}
		return held
	})
	slices.SortStableFunc(plan.Items, func(a, b policy.Item) int {
		return boolInt(a.Action == policy.ActDelete) - boolInt(b.Action == policy.ActDelete)
	})
	return plan
}

// recordFailures writes, for every failed add, update or delete, its queue
// entry with one more failure, or its dead letter at the last one. A failed
// move cannot be recorded (its queue entry would look done): the run fails
// and the next run's compare sees it again.
func (r *run) recordFailures(ctx context.Context, items map[string]policy.Item, failures []policy.Failure) error {
	var (
		puts     []registry.Pair
		dels     []string
		unrecord []string
	)
	for _, f := range failures {
		it, ok := items[f.PolicyName]
		if !ok || it.Action == policy.ActMove {
			unrecord = append(unrecord, f.PolicyName)
			continue
		}
		q := policy.QueueEntry{PolicyName: it.PolicyName, SHA: it.SHA, Operation: queueOp(it), CreatedAt: r.start.Format(timeLayout)}
		if it.Action == policy.ActDelete {
			q.SHA = it.OldSHA
		}
		if prev, ok := r.pending[it.PolicyName]; ok && prev.SHA == q.SHA && prev.Operation == q.Operation {
			q = prev // the same write failed again: count on
		}
		next, dead := queue.Failed(q, f.Error, r.start)
		if dead != nil {
			puts = append(puts, registry.DeadLetterPair(*dead))
			dels = append(dels, registry.QueueKey(it.PolicyName))
			r.log.Error("dead letter", KeyPolicy, it.PolicyName, KeyError, f.Error, "retryCount", next.RetryCount)
			continue
		}
		puts = append(puts, registry.QueuePair(next))
		r.log.Warn("failure queued for retry", KeyPolicy, it.PolicyName, "retryCount", next.RetryCount)
	}
	var errs []error
	if len(unrecord) > 0 {
		errs = append(errs, fmt.Errorf("cannot queue for retry: %v", unrecord))
	}
	for batch := range slices.Chunk(puts, r.opt.BatchSize) {
		if failed := r.Registry.Store().Put(ctx, batch); len(failed) > 0 {
			errs = append(errs, &registry.BatchError{Op: "record failures", Failed: failed})
		}
	}
	for batch := range slices.Chunk(dels, r.opt.BatchSize) {
		if failed := r.Registry.Store().Delete(ctx, batch); len(failed) > 0 {
			errs = append(errs, &registry.BatchError{Op: "record dead letters", Failed: failed})
		}
	}
	return errors.Join(errs...)
}

func queueOp(it policy.Item) string {
	switch it.Action {
	case policy.ActAdd:
		return policy.OpAdd
	case policy.ActDelete:
		return queue.OpDelete
	}
	return policy.OpUpdate
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
