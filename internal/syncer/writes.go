package syncer

import (
	"iter"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// op is one registry write and the policy whose outcome it decides: a
// removal, queue work or a repaired entry (the plan's items' puts are
// written by index, itemWrites). Ops are made batch by batch, as each
// batch is sent (planWrites), so that a run holds the writes of the
// batches in flight, not those of the whole plan.
type op struct {
	name, key string
	w         registry.Write
}

func newOp(name string, w registry.Write) op { return op{name: name, key: w.Key(), w: w} }

// planWrites makes the registry writes of a plan, by phase: announcements
// (the queue entry of an add or an update; queue work), publications (each
// entry) and removals (a deleted policy and its queue entry, a v1 key
// whose fields moved on, dropped queue entries, dead letters another
// version supersedes). Each phase is a sequence, walked once when the
// phase is applied; the counts are known up front, for the progress.
type planWrites struct {
	r    *run
	plan policy.Plan
	reg  registryState
	mig  differ.Migration
	work differ.QueueWork
	m    *mirrorRun
	now  string
	// dead are the dead letters the plan supersedes (few: one per dead
	// letter in the registry at most).
	dead []string
}

func (r *run) writes(plan policy.Plan, reg registryState, mig differ.Migration, work differ.QueueWork, m *mirrorRun) *planWrites {
	return &planWrites{r: r, plan: plan, reg: reg, mig: mig, work: work, m: m,
		now: r.start.Format(policy.TimeLayout), dead: differ.SupersededDeadLetters(plan, reg.dead)}
}

// removes says whether the item's writes are removals.
func removes(it policy.Item) bool {
	return it.Action == policy.ActDelete || (it.Action == policy.ActMigrate && it.Path == "")
}

// announces says whether the item is announced before it is published.
func announces(it policy.Item) bool {
	return it.Action == policy.ActAdd || it.Action == policy.ActUpdate
}

// counts are how many writes each phase makes.
func (p *planWrites) counts() (announce, publish, remove int) {
	for _, it := range p.plan.Items {
		switch {
		case removes(it):
			remove += 2
		case announces(it):
			announce++
			publish++
		default:
			publish++
		}
	}
	publish += len(repairedEntries(p.reg, p.m))
	return announce + len(p.work.Requeue), publish, remove + len(p.work.Drop) + len(p.dead)
}

// op is a write made, told to the run's made: the batch that sends it (or
// writeAll, when it leaves it out) lets it go.
func (p *planWrites) op(name string, w registry.Write) op {
	p.r.madeWrites(1)
	return newOp(name, w)
}

// entry is the entry the item publishes.
func (p *planWrites) entry(it policy.Item) policy.Entry {
	return withContentETag(p.r.entryOf(it, p.reg, p.mig, p.now), it, p.m)
}

func (p *planWrites) remove() iter.Seq[op] {
	return func(yield func(op) bool) {
		for _, it := range p.plan.Items {
			if removes(it) && (!yield(p.op(it.PolicyName, registry.DeletePolicy(it.PolicyName))) || !yield(p.op(it.PolicyName, registry.DeleteQueue(it.PolicyName)))) {
				return
			}
		}
		for _, name := range p.work.Drop {
			if !yield(p.op(name, registry.DeleteQueue(name))) {
				return
			}
		}
		for _, name := range p.dead {
			if !yield(p.op(name, registry.DeleteDeadLetter(name))) {
				return
			}
		}
	}
}

// madeKey is the context key of a hook told of the registry writes a run
// makes (n > 0) and lets go of (n < 0), batch by batch: tests bound the
// writes held at once with it (export_test.go).
type madeKey struct{}

// madeWrites tells the run's hook, if any, of n writes made (or, negative,
// let go).
func (r *run) madeWrites(n int) {
	if r.made != nil {
		r.made(n)
	}
}
