package differ

import (
	"maps"
	"slices"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/queue"
)

// QueueWork is what a run writes to the queue besides its items' own
// entries.
type QueueWork struct {
	// Requeue are queue entries rewritten clean: the registry already holds
	// the version the head wants, so the failure they recorded is over.
	Requeue []policy.QueueEntry
	// Drop are failed queue entries the head no longer needs written (its
	// version of the policy is skipped).
	Drop []string
	// Orphans are the queue entries among Drop whose policy does not
	// exist (RepairQueue): left behind, they announce a policy no worker
	// can find.
	Orphans []string
}

// SettleQueue fits the plan to the queue. pending are the failed writes of
// earlier runs the sync still owes; dead the dead letters. A retried name
// the head deleted gets a delete (its queue entry goes, nothing is
// resurrected); one whose registry entry already matches the head gets its
// queue entry rewritten clean; one whose head version is skipped has its
// queue entry dropped. A dead letter's version is held back (a skip) until a
// person retries it (plan.HeldBack); another version of the same policy
// goes ahead. Puts stay before deletes.
func SettleQueue(plan policy.Plan, desired Desired, entries map[string]policy.Entry,
	pending map[string]policy.QueueEntry, dead map[string]policy.DeadLetter, now time.Time) (policy.Plan, QueueWork) {
	planned := plannedOf(plan.Items, pending)
	skipped := map[string]bool{}
	for _, sk := range plan.Skipped {
		skipped[sk.PolicyName] = true
	}
	// The items are copied only when they change: a first sync of 200,000
	// policies settles nothing, and two copies of its items were its
	// largest heap (docs/bench.md). Capped, an append copies them too.
	items, owned := plan.Items[:len(plan.Items):len(plan.Items)], false
	plan.HeldBack = slices.Clone(plan.HeldBack)
	var work QueueWork
	for _, name := range slices.Sorted(maps.Keys(pending)) {
		d, want := desired.Get(name)
		switch {
		case planned[name]:
		case skipped[name]:
			work.Drop = append(work.Drop, name)
		case !want:
			items, owned = append(items, policy.Item{Action: policy.ActDelete, PolicyName: name, Old: policy.OldOf(entries[name].Path, entries[name].SHA)}), true
		default:
			op := pending[name].Operation
			if op == policy.OpDelete {
				op = policy.OpUpdate
			}
			work.Requeue = append(work.Requeue, policy.QueueEntry{PolicyName: name, SHA: d.SHA, Operation: op, CreatedAt: now.UTC().Format(policy.TimeLayout)})
		}
	}
	if !owned && slices.ContainsFunc(items, func(it policy.Item) bool { return holdsBack(dead, it) }) {
		items, owned = slices.Clone(items), true
	}
	items = slices.DeleteFunc(items, func(it policy.Item) bool {
		held := holdsBack(dead, it)
		if held {
			plan.HeldBack = append(plan.HeldBack, policy.Skip{PolicyName: it.PolicyName, Path: it.Path, Reason: queue.HeldBackReason(it.PolicyName)})
		}
		return held
	})
	putsFirst := func(a, b policy.Item) int { return isDelete(a) - isDelete(b) }
	if !slices.IsSortedFunc(items, putsFirst) {
		if !owned {
			items = slices.Clone(items)
		}
		slices.SortStableFunc(items, putsFirst)
	}
	plan.Items = items
	return plan, work
}

// plannedOf are the names of pending whose queue entry an item rewrites
// (rewritesQueue): all that settling asks of the plan, not a map of every
// planned name (a first sync of 200,000 policies made one of 4 MB, grown
// by doubling, where planning's heap peaks; docs/bench.md, "How we got
// here", "Memory, fifth pass").
func plannedOf(items []policy.Item, pending map[string]policy.QueueEntry) map[string]bool {
	planned := make(map[string]bool, len(pending))
	if len(pending) == 0 {
		return planned
	}
	for _, it := range items {
		if _, ok := pending[it.PolicyName]; ok && rewritesQueue(it) {
			planned[it.PolicyName] = true
		}
	}
	return planned
}

// rewritesQueue says whether the item's own writes replace its policy's
// queue entry: an add's or an update's announcement, a delete's removal.
// A move or a migration writes the entry alone, so a failed write the
// queue records for its name is settled as for a name the plan leaves
// alone (review: a failed delete's record outlived the move that brought
// the same blob back, and no run ever cleared it).
func rewritesQueue(it policy.Item) bool {
	return it.Action == policy.ActAdd || it.Action == policy.ActUpdate || it.Action == policy.ActDelete
}

// holdsBack reports whether a dead letter holds back the item: the same
// version of the same policy, or a delete of it, was given up on.
func holdsBack(dead map[string]policy.DeadLetter, it policy.Item) bool {
	dl, ok := dead[it.PolicyName]
	if !ok {
		return false
	}
	if it.Action == policy.ActDelete {
		return dl.Operation == policy.OpDelete
	}
	return dl.Operation != policy.OpDelete && dl.SHA == it.SHA
}

// SupersededDeadLetters returns the dead letters that hold nothing back:
// every dead letter read was planned from the head (a full run plans
// every name, an incremental one the names of the dead letters it read),
// and one whose version the plan did not hold back is history: another
// version goes ahead (an add, an update, a move, a delete), or the
// registry already holds what the head wants (the edit it gave up on was
// reverted; the file whose delete failed came back), or the head's
// version is skipped. A migration's entry rewritten beside a held-back
// update keeps its dead letter, which still holds that update back.
func SupersededDeadLetters(plan policy.Plan, dead map[string]policy.DeadLetter) []string {
	held := make(map[string]bool, len(plan.HeldBack))
	for _, sk := range plan.HeldBack {
		held[sk.PolicyName] = true
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(dead)) {
		if !held[name] {
			out = append(out, name)
		}
	}
	return out
}
