package differ

import "github.com/knue/syncjob/internal/policy"

// MetadataWrites are the writes that end every run: run history, lastRun,
// lastCommit.
const MetadataWrites = 3

// FixedWrites are the billable writes a run makes whatever it applies: its
// record, queue work, and with a lease taking it and releasing it.
func FixedWrites(work QueueWork, lease bool) int64 {
	fixed := int64(len(work.Requeue) + MetadataWrites)
	if lease {
		fixed += 2 // taking the lease, and releasing it with the record
	}
	return fixed
}

// FitBudget keeps the items of the plan whose writes fit in left billable
// writes, in the plan's stable order (a later, cheaper item may fit where
// an earlier one did not), and says how many must wait for another day. A
// v1 key's removal waits with the put of the policy that takes its fields
// (CarrierOf): removed first, the fields would be lost (review).
func FitBudget(plan policy.Plan, left int64) (policy.Plan, int) {
	fits := plan.Items[:0:0]
	cut := map[string]bool{}
	for _, it := range plan.Items {
		if c := ItemWrites(it); c <= left {
			left -= c
			fits = append(fits, it)
		} else {
			cut[it.PolicyName] = true
		}
	}
	if len(cut) > 0 {
		kept := fits[:0]
		for _, it := range fits {
			if c, ok := CarrierOf(it); !ok || !cut[c] {
				kept = append(kept, it)
			}
		}
		fits = kept
	}
	waiting := len(plan.Items) - len(fits)
	plan.Items = fits
	return plan, waiting
}

// ItemWrites is what writing the item bills (deletes are billed apart): an
// add or an update its entry and its queue entry; a move or a migration
// its entry.
func ItemWrites(it policy.Item) int64 {
	switch {
	case it.Action == policy.ActAdd || it.Action == policy.ActUpdate:
		return 2 // entry and queue entry
	case it.Action == policy.ActMove || (it.Action == policy.ActMigrate && it.Path != ""):
		return 1
	}
	return 0
}

// ReserveWrites are the writes of a budgeted run's reservation (see
// Reserve): one with the lease it takes, one once its plan is fitted.
func ReserveWrites(lease bool) int64 {
	if lease {
		return 2
	}
	return 1
}

// RecordWrites are the writes a run that took the lease makes after its
// plan, whatever it applies: its record and the lease's release.
const RecordWrites = MetadataWrites + 1

// Reserve is at most what a run still writes once its plan is fitted to the
// budget: every item's writes, a failure record for each item and for each
// of unread files that failed to read, the queue work, and its record and
// release. A budgeted run records it before it applies, so a kill cannot
// lose the count of what it wrote.
func Reserve(plan policy.Plan, work QueueWork, unread int) int64 {
	return int64(len(plan.Items)+unread+len(work.Requeue)) + RecordWrites + Writes(plan)
}

// Writes is what the plan's items write (ItemWrites).
func Writes(plan policy.Plan) int64 {
	var n int64
	for _, it := range plan.Items {
		n += ItemWrites(it)
	}
	return n
}
