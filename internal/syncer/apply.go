package syncer

import (
	"context"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// op is one registry write and the policy it belongs to.
type op struct {
	name string
	pair registry.Pair // for puts
	key  string        // for deletes
}

// apply writes the plan: every put (entries and queue entries) first, then
// every delete, each phase in batches of at most BatchSize pairs with at most
// Concurrency batches in flight. One failed item never stops the others; the
// failures are returned, one per policy.
func (r *run) apply(ctx context.Context, plan policy.Plan, entries map[string]policy.Entry) []policy.Failure {
	now := r.start.Format(timeLayout)
	var puts, dels []op
	for _, it := range plan.Items {
		switch {
		case it.Action == policy.ActDelete || (it.Action == policy.ActMigrate && it.Path == ""):
			// a deleted policy, or a v1 key whose fields moved on
			dels = append(dels,
				op{name: it.PolicyName, key: registry.PolicyKey(it.PolicyName)},
				op{name: it.PolicyName, key: registry.QueueKey(it.PolicyName)})
		default:
			e := entries[it.PolicyName]
			e.PolicyName, e.Title, e.Status, e.SHA, e.Path = it.PolicyName, it.Title, policy.StatusActive, it.SHA, it.Path
			if (it.Action != policy.ActMove && it.Action != policy.ActMigrate) || e.LastUpdated == "" {
				e.LastUpdated = now
			}
			e = r.withLegacy(e)
			puts = append(puts, op{name: it.PolicyName, pair: registry.PolicyPair(e)})
			if it.Action == policy.ActMove || it.Action == policy.ActMigrate {
				continue
			}
			operation := policy.OpUpdate
			if it.Action == policy.ActAdd {
				operation = policy.OpAdd
			}
			puts = append(puts, op{name: it.PolicyName, pair: registry.QueuePair(policy.QueueEntry{
				PolicyName: it.PolicyName, SHA: it.SHA, Operation: operation, CreatedAt: now, FileNo: e.FileNo,
			})})
		}
	}
	for _, q := range r.requeue {
		puts = append(puts, op{name: q.PolicyName, pair: registry.QueuePair(q)})
	}
	for _, name := range r.dropQueue {
		dels = append(dels, op{name: name, key: registry.QueueKey(name)})
	}
	for _, it := range plan.Items {
		if _, ok := r.dead[it.PolicyName]; ok {
			// another version goes ahead: the dead letter's is history
			dels = append(dels, op{name: it.PolicyName, key: registry.DeadLetterKey(it.PolicyName)})
		}
	}
	failed := map[string]string{}
	var mu sync.Mutex
	record := func(batch []op, errs map[string]error) {
		if len(errs) == 0 {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, o := range batch {
			k := o.key
			if k == "" {
				k = o.pair.Key
			}
			if err, ok := errs[k]; ok && err != nil {
				if prev, seen := failed[o.name]; seen {
					failed[o.name] = prev + "; " + err.Error()
				} else {
					failed[o.name] = err.Error()
				}
			}
		}
	}
	r.runBatches(ctx, puts, func(ctx context.Context, batch []op) {
		pairs := make([]registry.Pair, len(batch))
		for i, o := range batch {
			pairs[i] = o.pair
		}
		record(batch, r.Registry.Store().Put(ctx, pairs))
		r.log.Debug("batch applied", KeyPuts, len(pairs))
	})
	r.runBatches(ctx, dels, func(ctx context.Context, batch []op) {
		keys := make([]string, len(batch))
		for i, o := range batch {
			keys[i] = o.key
		}
		record(batch, r.Registry.Store().Delete(ctx, keys))
		r.log.Debug("batch applied", KeyDeletes, len(keys))
	})
	out := make([]policy.Failure, 0, len(failed))
	for name, msg := range failed {
		out = append(out, policy.Failure{PolicyName: name, Error: msg})
		r.log.Error("item failed", KeyPolicy, name, KeyError, msg)
	}
	slices.SortFunc(out, func(a, b policy.Failure) int { return strings.Compare(a.PolicyName, b.PolicyName) })
	return out
}

// runBatches calls do for each batch of ops, with bounded concurrency.
func (r *run) runBatches(ctx context.Context, ops []op, do func(context.Context, []op)) {
	var g errgroup.Group
	g.SetLimit(r.opt.Concurrency)
	for batch := range slices.Chunk(ops, r.opt.BatchSize) {
		g.Go(func() error {
			do(ctx, batch)
			return nil
		})
	}
	_ = g.Wait()
}
