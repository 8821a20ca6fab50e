package differ

import (
	"slices"
	"strings"

	"github.com/knue/syncjob/internal/policy"
)

// AddsPaths reports whether the changeset brings a policy path that was not
// there: the compare does not say whether it is a regular file, a symlink or
// a submodule, the head tree does.
func AddsPaths(cs policy.Changeset) bool {
	for _, c := range cs.Changes {
		switch c.Status {
		case policy.Added, policy.Copied, policy.Renamed:
			if policy.IsPolicyPath(c.Path) {
				return true
			}
		}
	}
	return false
}

// ModifiesUnknown reports whether cs modifies a policy path the registry
// (entries, read by name) does not hold for its name: only the head tree
// says what it is. GitHub's compare lists a symlink whose target changed
// as "modified", with a blob sha, as it lists an edited file, and gives no
// mode: without the tree an incremental run published the link as a
// policy, or let it win its name over the real file (review).
func ModifiesUnknown(cs policy.Changeset, entries map[string]policy.Entry) bool {
	for _, c := range cs.Changes {
		if c.Status != policy.Modified || !policy.IsPolicyPath(c.Path) {
			continue
		}
		if e, ok := entries[policy.NameOf(c.Path)]; !ok || e.Path != c.Path {
			return true
		}
	}
	return false
}

// Touches reports whether scope holds a name that was skipped or in
// conflict: its other paths are only in the head tree.
func Touches(scope map[string]bool, skipped []policy.Skip, conflicts []policy.Conflict) bool {
	for _, sk := range skipped {
		if scope[sk.PolicyName] {
			return true
		}
	}
	for _, c := range conflicts {
		if scope[c.PolicyName] {
			return true
		}
	}
	return false
}

// InScope keeps the skips and conflicts of the names in scope.
func InScope(scope map[string]bool, skipped []policy.Skip, conflicts []policy.Conflict) ([]policy.Skip, []policy.Conflict) {
	skipped = slices.DeleteFunc(slices.Clone(skipped), func(s policy.Skip) bool { return !scope[s.PolicyName] })
	conflicts = slices.DeleteFunc(slices.Clone(conflicts), func(c policy.Conflict) bool { return !scope[c.PolicyName] })
	return skipped, conflicts
}

// CarryOver adds the previous run's skips and conflicts of the names an
// incremental run did not look at (out of scope): they still hold, and are
// reported every run. Skips are sorted by path, conflicts by name.
func CarryOver(scope map[string]bool, skipped []policy.Skip, conflicts []policy.Conflict, prevSkipped []policy.Skip, prevConflicts []policy.Conflict) ([]policy.Skip, []policy.Conflict) {
	for _, sk := range prevSkipped {
		if !scope[sk.PolicyName] {
			skipped = append(skipped, sk)
		}
	}
	for _, c := range prevConflicts {
		if !scope[c.PolicyName] {
			conflicts = append(conflicts, c)
		}
	}
	slices.SortFunc(skipped, func(a, b policy.Skip) int { return strings.Compare(a.Path, b.Path) })
	slices.SortFunc(conflicts, func(a, b policy.Conflict) int { return strings.Compare(a.PolicyName, b.PolicyName) })
	return skipped, conflicts
}

// Renames returns the policy names the changeset renames, old name → new
// name, as git paired them (a rename git reports, even with edits).
func Renames(cs policy.Changeset) map[string]string {
	out := map[string]string{}
	for _, c := range cs.Changes {
		if c.Status == policy.Renamed && policy.IsPolicyPath(c.PreviousPath) && policy.IsPolicyPath(c.Path) {
			if from, to := policy.NameOf(c.PreviousPath), policy.NameOf(c.Path); from != to {
				out[from] = to
			}
		}
	}
	return out
}
