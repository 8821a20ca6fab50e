package differ

import "github.com/knue/syncjob/internal/policy"

// Unreached takes out of the plan the adds and updates whose content the
// read reached neither way (in neither read nor readErrs): a read its run's
// deadline cut short. They are not failures — nothing went wrong with them
// — but writes left for the next run, which plans them again from the
// registry as it is. It returns the plan less them and their names, in plan
// order; the plan itself when every file was reached.
func Unreached(plan policy.Plan, read map[string]policy.Content, readErrs map[string]error) (policy.Plan, []string) {
	reached := func(it policy.Item) bool {
		if it.Action != policy.ActAdd && it.Action != policy.ActUpdate {
			return true
		}
		_, ok := read[it.Path]
		_, failed := readErrs[it.Path]
		return ok || failed
	}
	var late []string
	for _, it := range plan.Items {
		if !reached(it) {
			late = append(late, it.PolicyName)
		}
	}
	if len(late) == 0 {
		return plan, nil
	}
	items := make([]policy.Item, 0, len(plan.Items)-len(late))
	for _, it := range plan.Items {
		if reached(it) {
			items = append(items, it)
		}
	}
	plan.Items = items
	return plan, late
}
