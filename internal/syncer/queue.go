package syncer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/queue"
	"github.com/knue/syncjob/internal/registry"
)

// pendingRetries returns the failed writes of earlier runs that the sync
// still owes — failed queue entries whose registry entry does not hold their
// version (entries a worker failed, whose version the registry holds, are
// the worker's) — and every name the next plan must look at again: those,
// and the names the last run could not queue (a failed move). After a clean
// run that recorded them (prev.Pending), only those names are read;
// otherwise the queue is listed.
func (r *run) pendingRetries(ctx context.Context, prev *policy.RunSummary, unclean string) (map[string]policy.QueueEntry, []string, error) {
	if prev == nil || prev.Pending == nil || unclean != "" {
		pending, err := r.listPending(ctx)
		return pending, slices.Sorted(maps.Keys(pending)), err
	}
	pending := map[string]policy.QueueEntry{}
	if len(prev.Pending) == 0 {
		return pending, nil, nil
	}
	queued, entries, err := r.Registry.Owed(ctx, prev.Pending)
	var bad *registry.DecodeError
	if errors.As(err, &bad) {
		r.log.Warn("queue or registry entries unreadable", logkey.Error, err)
	} else if err != nil {
		return nil, nil, err
	}
	for name, q := range queued {
		cur, present := entries[name]
		if queue.SyncPending(q, cur, present) {
			pending[name] = q
		}
	}
	return pending, slices.Clone(prev.Pending), nil
}

// listPending finds the pending retries by listing the queue.
func (r *run) listPending(ctx context.Context) (map[string]policy.QueueEntry, error) {
	failed, err := r.Registry.FailedQueue(ctx)
	var bad *registry.DecodeError
	if errors.As(err, &bad) {
		r.log.Warn("queue entries unreadable", logkey.Error, err)
	} else if err != nil {
		return nil, fmt.Errorf("registry: read queue: %w", err)
	}
	pending := map[string]policy.QueueEntry{}
	for name, q := range failed {
		cur, present, err := r.Registry.Policy(ctx, name)
		if errors.As(err, &bad) {
			// unreadable: the retried write replaces it
			r.log.Warn("registry entry unreadable", logkey.Policy, name, logkey.Error, err)
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

// recordFailures writes, for every failed add, update or delete, its queue
// entry with one more failure, or its dead letter at the last one. It
// returns the names the next run must look at again (every failure but
// those given up on: a failed move, which has no queue entry to record it,
// is revisited by name) and the versions now held back by a dead letter.
func (r *run) recordFailures(ctx context.Context, plan policy.Plan, failures []policy.Failure, pending map[string]policy.QueueEntry) ([]string, []policy.Skip, error) {
	items := make(map[string]policy.Item, len(plan.Items))
	for _, it := range plan.Items {
		items[it.PolicyName] = it
	}
	var (
		writes []registry.Write
		owed   = []string{}
		dead   []policy.Skip
	)
	for _, f := range failures {
		it, ok := items[f.PolicyName]
		if !ok || it.Action == policy.ActMove || it.Action == policy.ActMigrate {
			owed = append(owed, f.PolicyName)
			continue
		}
		ws, gaveUp := r.failureWrites(it, f, pending)
		if gaveUp {
			path := it.Path
			if path == "" {
				path = it.OldPath
			}
			dead = append(dead, policy.Skip{PolicyName: it.PolicyName, Path: path, Reason: differ.HeldBackReason(it.PolicyName)})
		} else {
			owed = append(owed, it.PolicyName)
		}
		writes = append(writes, ws...)
	}
	var errs []error
	for batch := range slices.Chunk(writes, r.opt.BatchSize) {
		if failed := r.Registry.Write(ctx, batch...); len(failed) > 0 {
			errs = append(errs, &registry.BatchError{Op: "record failures", Failed: failed})
		}
	}
	return owed, dead, errors.Join(errs...)
}

// failureWrites records one more failure of the item: its queue entry, or at
// the last failure its dead letter in place of the queue entry.
func (r *run) failureWrites(it policy.Item, f policy.Failure, pending map[string]policy.QueueEntry) (ws []registry.Write, gaveUp bool) {
	q := policy.QueueEntry{PolicyName: it.PolicyName, SHA: it.SHA, Operation: differ.QueueOp(it), CreatedAt: r.start.Format(policy.TimeLayout)}
	if it.Action == policy.ActDelete {
		q.SHA = it.OldSHA
	}
	if prev, ok := pending[it.PolicyName]; ok && prev.SHA == q.SHA && prev.Operation == q.Operation {
		q = prev // the same write failed again: count on
	}
	next, dead := queue.FailedIn(q, f.Error, r.attempt(), r.start)
	if dead != nil {
		r.log.Error("dead letter", logkey.Policy, it.PolicyName, logkey.Error, f.Error, logkey.RetryCount, next.RetryCount)
		return []registry.Write{registry.PutDeadLetter(*dead), registry.DeleteQueue(it.PolicyName)}, true
	}
	r.log.Warn("failure queued for retry", logkey.Policy, it.PolicyName, logkey.RetryCount, next.RetryCount)
	return []registry.Write{registry.PutQueue(next)}, false
}
