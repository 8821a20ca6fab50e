package differ

import (
	"maps"
	"slices"

	"github.com/knue/syncjob/internal/policy"
)

// Distrust makes the plan write every name in touched from the head,
// whatever the registry read said of it: on an eventually consistent
// registry a name a run of the last minute wrote may read as it was before
// that write (docs/design.md, "Stale reads"). A touched name the plan
// leaves alone is put again (an update of the same version, so its queue
// entry announces it: workers compare shas, a second announcement is
// harmless) when the head has it, deleted when not. Skipped names stay
// untouched; a touched name out of desired is one the head does not have.
// A touched name the plan moves is announced too (an update): a move
// publishes without an announcement, trusting the entry read, which may
// be from before that name's delete (a soak found a policy published with
// no queue entry: seed 44647, a rename reverted within the window).
func Distrust(plan policy.Plan, desired Desired, known map[string]policy.Entry, touched map[string]bool) policy.Plan {
	if len(touched) == 0 {
		return plan
	}
	leave := map[string]bool{}
	for _, it := range plan.Items {
		leave[it.PolicyName] = true
	}
	for _, sk := range plan.Skipped {
		leave[sk.PolicyName] = true
	}
	plan.Items = slices.Clone(plan.Items)
	for i, it := range plan.Items {
		if it.Action == policy.ActMove && touched[it.PolicyName] {
			plan.Items[i].Action = policy.ActUpdate
		}
	}
	for _, name := range slices.Sorted(maps.Keys(touched)) {
		if leave[name] || !policy.KeyFits(name) {
			continue
		}
		d, want := desired.Get(name)
		k, had := known[name]
		switch {
		case want && had:
			plan.Unchanged-- // Plan counted it unchanged
			plan.Items = append(plan.Items, policy.Item{Action: policy.ActUpdate, PolicyName: name, Path: d.Path, SHA: d.SHA, Old: policy.OldOf(k.Path, k.SHA)})
		case want:
			plan.Items = append(plan.Items, policy.Item{Action: policy.ActAdd, PolicyName: name, Path: d.Path, SHA: d.SHA})
		default:
			plan.Items = append(plan.Items, policy.Item{Action: policy.ActDelete, PolicyName: name, Old: policy.OldOf(k.Path, k.SHA)})
		}
	}
	slices.SortStableFunc(plan.Items, func(a, b policy.Item) int { return isDelete(a) - isDelete(b) })
	return plan
}

// TouchedNames returns the policy names of paths (any path that is not a
// policy is left out).
func TouchedNames(paths []string) map[string]bool {
	names := map[string]bool{}
	for _, p := range paths {
		if policy.IsPolicyPath(p) {
			names[policy.NameOf(p)] = true
		}
	}
	return names
}
