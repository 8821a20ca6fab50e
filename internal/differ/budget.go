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
// an earlier one did not), and says how many must wait for another day.
func FitBudget(plan policy.Plan, left int64) (policy.Plan, int) {
	fits := plan.Items[:0:0]
	for _, it := range plan.Items {
		if c := ItemWrites(it); c <= left {
			left -= c
			fits = append(fits, it)
		}
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
