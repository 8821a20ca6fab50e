package syncer

import (
	"context"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// op is one registry write and the policy whose outcome it decides.
type op struct {
	name  string
	write registry.Write
}

// apply writes the plan: every put (entries and queue entries) first, then
// every delete, each phase in batches of at most BatchSize writes with at
// most Concurrency batches in flight. One failed item never stops the
// others; the failures are returned, one per policy.
func (r *run) apply(ctx context.Context, plan policy.Plan, reg registryState, mig differ.Migration, work differ.QueueWork) []policy.Failure {
	puts, dels := r.writes(plan, reg, mig, work)
	var fails failures
	for _, phase := range []struct {
		key string
		ops []op
	}{{logkey.Puts, puts}, {logkey.Deletes, dels}} {
		r.runBatches(ctx, phase.ops, func(ctx context.Context, batch []op) {
			ws := make([]registry.Write, len(batch))
			for i, o := range batch {
				ws[i] = o.write
			}
			fails.add(batch, r.Registry.Write(ctx, ws...))
			r.log.Debug("batch applied", phase.key, len(batch))
		})
	}
	out := fails.list()
	for _, f := range out {
		r.log.Error("item failed", logkey.Policy, f.PolicyName, logkey.Error, f.Error)
	}
	return out
}

// writes turns the plan into registry writes: puts (each entry, and the
// queue entry of an add or an update; queue work) and deletes (a deleted
// policy and its queue entry, a v1 key whose fields moved on, dropped queue
// entries, dead letters another version supersedes).
func (r *run) writes(plan policy.Plan, reg registryState, mig differ.Migration, work differ.QueueWork) (puts, dels []op) {
	now := r.start.Format(policy.TimeLayout)
	for _, it := range plan.Items {
		if it.Action == policy.ActDelete || (it.Action == policy.ActMigrate && it.Path == "") {
			dels = append(dels, op{it.PolicyName, registry.DeletePolicy(it.PolicyName)}, op{it.PolicyName, registry.DeleteQueue(it.PolicyName)})
			continue
		}
		e := reg.entries[it.PolicyName]
		e.PolicyName, e.Title, e.Status, e.SHA, e.Path = it.PolicyName, it.Title, policy.StatusActive, it.SHA, it.Path
		if (it.Action != policy.ActMove && it.Action != policy.ActMigrate) || e.LastUpdated == "" {
			e.LastUpdated = now
		}
		e = differ.WithLegacy(e, mig.Carry, r.start)
		puts = append(puts, op{it.PolicyName, registry.PutPolicy(e)})
		if it.Action == policy.ActAdd || it.Action == policy.ActUpdate {
			q := policy.QueueEntry{PolicyName: it.PolicyName, SHA: it.SHA, Operation: differ.QueueOp(it), CreatedAt: now, FileNo: e.FileNo}
			puts = append(puts, op{it.PolicyName, registry.PutQueue(q)})
		}
	}
	for _, q := range work.Requeue {
		puts = append(puts, op{q.PolicyName, registry.PutQueue(q)})
	}
	for _, name := range work.Drop {
		dels = append(dels, op{name, registry.DeleteQueue(name)})
	}
	for _, name := range differ.SupersededDeadLetters(plan, reg.dead) {
		dels = append(dels, op{name, registry.DeleteDeadLetter(name)})
	}
	return puts, dels
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

// failures collects the failed writes of concurrent batches, by policy.
type failures struct {
	mu     sync.Mutex
	byName map[string]string
}

func (f *failures) add(batch []op, errs map[string]error) {
	if len(errs) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byName == nil {
		f.byName = map[string]string{}
	}
	for _, o := range batch {
		err, ok := errs[o.write.Key()]
		if !ok || err == nil {
			continue
		}
		if prev, seen := f.byName[o.name]; seen {
			f.byName[o.name] = prev + "; " + err.Error()
		} else {
			f.byName[o.name] = err.Error()
		}
	}
}

func (f *failures) list() []policy.Failure {
	out := make([]policy.Failure, 0, len(f.byName))
	for name, msg := range f.byName {
		out = append(out, policy.Failure{PolicyName: name, Error: msg})
	}
	return sortFailures(out)
}
