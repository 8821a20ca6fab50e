package differ

import (
	"time"

	"github.com/knue/syncjob/internal/policy"
)

// RepairQueue adds to work what makes the queue match the registry after a
// full run: a queue entry for a policy that does not exist (an announcement
// whose delete's queue removal failed: a refused key, a kill between
// batches) is removed, and one whose sha is not its policy's is rewritten
// for the policy's version (a worker compares shas: a fresh announcement is
// harmless). Names the plan writes and failed writes the sync owes
// (pending: SettleQueue's) are left alone. A held-back name's entry is
// settled too, failure record or not: it may announce only what the
// registry holds, for the dead letter holds the count (an adversarial
// helper: a kill after the dead letter landed, or its queue removal
// failing, left the held-back version announced for good, or its failure
// record, which counted on after a drop). So is a skipped name's (a skip
// keeps the registry's version: an announcement of the skipped one, left by
// a run killed between announce and publish, stayed for good); one with no
// policy (an add announced, its file then emptied or grown too large)
// announces nothing a worker could fetch: its entry is an orphan like any
// other. queued are the queue entries' versions, sorted by name, each name
// once, less any the caller left out because QueueCurrent reports them
// (RepairQueue does nothing with those); entries the policies the registry
// holds.
func RepairQueue(plan policy.Plan, work QueueWork, entries map[string]policy.Entry, pending map[string]policy.QueueEntry, queued []policy.Queued, now time.Time) QueueWork {
	leave, held := map[string]bool{}, map[string]bool{}
	for _, it := range plan.Items {
		leave[it.PolicyName] = true
	}
	for _, sk := range plan.HeldBack {
		held[sk.PolicyName] = true
	}
	for _, name := range work.Drop {
		leave[name] = true
	}
	for _, q := range work.Requeue {
		leave[q.PolicyName] = true
	}
	for _, q := range queued {
		name := q.PolicyName
		if _, owed := pending[name]; (owed && !held[name]) || leave[name] {
			continue
		}
		e, ok := entries[name]
		switch {
		case !ok:
			work.Drop = append(work.Drop, name)
			work.Orphans = append(work.Orphans, name)
		case !QueueCurrent(entries, q):
			work.Requeue = append(work.Requeue, policy.QueueEntry{PolicyName: name, SHA: e.SHA, Operation: policy.OpUpdate, CreatedAt: now.UTC().Format(policy.TimeLayout)})
		}
	}
	return work
}

// QueueCurrent reports whether a queue entry announces the version of its
// policy that the registry holds: RepairQueue leaves it as it is, whatever
// the plan. A full run keeps only the queue entries it does not report
// while it lists the queue (docs/bench.md, "A full run's memory"): the
// rest are all the queue's entries in the usual case.
func QueueCurrent(entries map[string]policy.Entry, q policy.Queued) bool {
	e, ok := entries[q.PolicyName]
	return ok && e.SHA == q.SHA
}
