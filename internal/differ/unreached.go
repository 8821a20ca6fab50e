package differ

import "github.com/knue/syncjob/internal/policy"

// Unreached takes out of the plan the adds and updates whose content the
// read reached neither way (in neither read nor readErrs): a read its run's
// deadline cut short. They are not failures — nothing went wrong with them
// — but writes left for the next run, which plans them again from the
// registry as it is. When any is left, the plan's deletes are left with
// them: a delete's content may live on under a name whose add was not
// reached (a rename), and without that add the guard would count it lost
// and the registry would miss it until the next run. It returns the plan
// less them and their names, in plan order; the plan itself when every
// file was reached.
func Unreached(plan policy.Plan, read map[string]policy.Content, readErrs map[string]error) (policy.Plan, []string) {
	reached := func(it policy.Item) bool {
		if it.Action != policy.ActAdd && it.Action != policy.ActUpdate {
			return true
		}
		_, ok := read[it.Path]
		_, failed := readErrs[it.Path]
		return ok || failed
	}
	cut := false
	for _, it := range plan.Items {
		if !reached(it) {
			cut = true
			break
		}
	}
	if !cut {
		return plan, nil
	}
	var late []string
	items := make([]policy.Item, 0, len(plan.Items))
	for _, it := range plan.Items {
		if reached(it) && it.Action != policy.ActDelete {
			items = append(items, it)
		} else {
			late = append(late, it.PolicyName)
		}
	}
	plan.Items = items
	return plan, late
}
