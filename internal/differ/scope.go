package differ

import (
	"maps"
	"slices"

	"github.com/knue/syncjob/internal/policy"
)

// Before is what a run knows, when it plans, of the runs before it.
type Before struct {
	Last *policy.RunSummary // the last run; nil when none or unreadable
	// Unclean says why the registry may differ from the last commit's tree
	// (see Unclean); "" after a clean run.
	Unclean string
	// Revisit are the names the plan must look at again: failed writes of
	// earlier runs, names a person asked to retry.
	Revisit []string
}

func (b Before) lastSkips() ([]policy.Skip, []policy.Conflict) {
	if b.Last == nil {
		return nil, nil
	}
	return b.Last.Skipped, b.Last.Conflicts
}

// ReadScope returns the names an incremental run reads of the registry —
// those the changeset touches, those to revisit (retries), those a dead
// letter held back at the last run (held, whose dead letters it reads by
// name) — or nil for every entry and every dead letter: a full run (cs
// nil), or a run after one that did not record the registry's size (an
// older syncjob, an unclean run).
func ReadScope(b Before, cs *policy.Changeset) (names, held []string) {
	if cs == nil || b.Last == nil || b.Last.Pending == nil || b.Unclean != "" {
		return nil, nil
	}
	for _, h := range b.Last.HeldBack {
		held = append(held, h.PolicyName)
	}
	// A name whose keys would pass the store's limit has no entry to read
	// (the plan skips it): asking would fail the whole read.
	names = slices.DeleteFunc(slices.Sorted(maps.Keys(incrementalScope(b, *cs, held))), func(n string) bool { return !policy.KeyFits(n) })
	return names, held
}

// incrementalScope is every name an incremental run plans: those the
// changeset touches, those to revisit, those with a dead letter (so that a
// version one holds back is named every run, not only when a commit
// touches it).
func incrementalScope(b Before, cs policy.Changeset, dead []string) map[string]bool {
	scope := Touched(cs)
	for _, name := range b.Revisit {
		scope[name] = true
	}
	for _, name := range dead {
		scope[name] = true
	}
	return scope
}

// TreeNeeded reports whether an incremental plan needs the head tree:
// deletes, new paths, retries, dead letters, and names whose skipped or
// losing paths the changeset does not show are decided from it.
func TreeNeeded(b Before, cs policy.Changeset, dead []string) bool {
	prevSkipped, prevConflicts := b.lastSkips()
	return NeedsTree(cs) || AddsPaths(cs) || len(b.Revisit) > 0 || len(dead) > 0 ||
		Touches(Touched(cs), prevSkipped, prevConflicts)
}

// PlanFull plans from the head tree against every entry the registry
// knows.
func PlanFull(tree []policy.File, known map[string]policy.Entry, opt Options) (Desired, policy.Plan) {
	desired, skipped, conflicts := FromTree(tree, opt)
	return desired, Plan(desired, known, nil, skipped, conflicts)
}

// PlanIncremental plans from the changeset, and from the head tree (when
// read: not nil) for the names the changeset cannot decide alone; dead are
// the names that have a dead letter.
func PlanIncremental(b Before, cs policy.Changeset, known map[string]policy.Entry, dead []string, tree []policy.File, opt Options) (Desired, policy.Plan) {
	desired, scope, skipped, conflicts := FromChanges(cs, known, nil, opt)
	if tree != nil {
		scope = incrementalScope(b, cs, dead)
		desired, skipped, conflicts = FromTree(tree, opt)
		skipped, conflicts = InScope(scope, skipped, conflicts)
	}
	prevSkipped, prevConflicts := b.lastSkips()
	skipped, conflicts = CarryOver(scope, skipped, conflicts, prevSkipped, prevConflicts)
	return desired, Plan(desired, known, scope, skipped, conflicts)
}
