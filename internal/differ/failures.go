package differ

import (
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/queue"
)

// Retry is the record of one failed item: its queue entry with one more
// failure, or, at the last one, the dead letter that replaces it.
type Retry struct {
	Entry policy.QueueEntry
	Dead  *policy.DeadLetter // given up: write it and remove the queue entry
	Cause string             // the item's failure
}

// Failures is what a run records of its failed items.
type Failures struct {
	Retries []Retry // in the order of the failures
	// Owed are the names the next run must look at again: every failure but
	// those given up on (a failed move, which has no queue entry to record
	// it, is revisited by name).
	Owed []string
	// HeldBack are the versions now held back by a dead letter.
	HeldBack []policy.Skip
}

// RecordFailures decides, for every failed add, update or delete of plan
// (the items as planned), whether it is owed again (its queue entry counts
// one more failure) or dead (its third: a dead letter). pending are the
// failed writes of earlier runs: the same write failing again counts on.
// attempt names this attempt across Lambda's retries (see queue.FailedIn).
func RecordFailures(plan policy.Plan, failures []policy.Failure, pending map[string]policy.QueueEntry, attempt string, now time.Time) Failures {
	items := make(map[string]policy.Item, len(plan.Items))
	for _, it := range plan.Items {
		items[it.PolicyName] = it
	}
	out := Failures{Owed: []string{}}
	owed := map[string]bool{}
	owe := func(name string) { // once: a carrier may fail too
		if !owed[name] {
			owed[name] = true
			out.Owed = append(out.Owed, name)
		}
	}
	for _, f := range failures {
		it, ok := items[f.PolicyName]
		if !ok || it.Action == policy.ActMove || it.Action == policy.ActMigrate {
			owe(f.PolicyName)
			if carrier, ok := CarrierOf(it); ok {
				owe(carrier) // its title matches the v1 key again (Migrate)
			}
			continue
		}
		r := retryOf(it, f, pending, attempt, now)
		if r.Dead != nil && !policy.KeyFits(it.PolicyName) {
			r.Dead = nil // its dead-letter: key would pass the key limit (a name another writer left): it stays owed
		}
		out.Retries = append(out.Retries, r)
		if r.Dead == nil {
			owe(it.PolicyName)
			continue
		}
		path := it.Path
		if path == "" {
			path = it.OldPath()
		}
		out.HeldBack = append(out.HeldBack, policy.Skip{PolicyName: it.PolicyName, Path: path, Reason: queue.HeldBackReason(it.PolicyName)})
	}
	return out
}

// retryOf records one more failure of the item.
func retryOf(it policy.Item, f policy.Failure, pending map[string]policy.QueueEntry, attempt string, now time.Time) Retry {
	q := policy.QueueEntry{PolicyName: it.PolicyName, SHA: it.SHA, Operation: queue.Op(it), CreatedAt: now.Format(policy.TimeLayout)}
	if it.Action == policy.ActDelete {
		q.SHA = it.OldSHA()
	}
	if prev, ok := pending[it.PolicyName]; ok && prev.SHA == q.SHA && prev.Operation == q.Operation {
		q = prev // the same write failed again: count on
	}
	next, dead := queue.FailedIn(q, f.Error, attempt, now)
	return Retry{Entry: next, Dead: dead, Cause: f.Error}
}
