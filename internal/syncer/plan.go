package syncer

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
)

// planned is what the planning step decided.
type planned struct {
	mode, reason string // the mode the run took (an untrusted compare makes it full)
	plan         policy.Plan
	desired      map[string]policy.Desired // what the head wants, with the tree's sizes
	work         differ.QueueWork
	// renames are the policy names git reports renamed by the compare, old
	// name → new name, for the mass-delete guard.
	renames map[string]string
}

// plan decides what the run writes and reads what it needs of the registry
// to decide: in a full run, the head tree against every entry; in an
// incremental one, the compare last...head against the entries of the names
// it touches (after a run that recorded what the registry holds; else every
// entry), reading the head tree when the compare cannot say enough
// (removals, new paths, retries, names skipped or in conflict). The differ
// then fits the plan to the queue. An untrusted compare makes the run full.
func (r *run) plan(ctx context.Context, st state, mode, reason string) (planned, registryState, error) {
	p := planned{mode: mode, reason: reason}
	var cs *policy.Changeset
	if mode == ModeIncremental {
		c, err := r.compare(ctx, st)
		switch {
		case errors.Is(err, policy.ErrCompareUntrusted):
			p.mode, p.reason = ModeFull, err.Error()
		case err != nil:
			return p, registryState{}, err
		default:
			cs = &c
		}
	}
	dead, err := r.readDeadLetters(ctx)
	if err != nil {
		return p, registryState{}, err
	}
	reg, err := r.readRegistry(ctx, st, readScope(st, cs, dead))
	if err != nil {
		return p, reg, err
	}
	reg.dead = dead
	if cs != nil {
		p.desired, p.plan, err = r.planIncremental(ctx, st, *cs, reg)
		p.renames = differ.Renames(*cs)
	} else {
		p.desired, p.plan, err = r.planFull(ctx, st, reg.known())
	}
	if err != nil {
		return p, reg, err
	}
	r.log.Info("mode chosen", logkey.Mode, p.mode, logkey.Reason, p.reason, logkey.Commit, st.head, logkey.Previous, st.last, logkey.Retries, len(st.revisit))
	p.plan, p.work = differ.SettleQueue(p.plan, p.desired, reg.entries, st.pending, reg.dead, r.start)
	return p, reg, nil
}

// compare returns the changes last...head (none when they are the same
// commit: a run that only retries).
func (r *run) compare(ctx context.Context, st state) (policy.Changeset, error) {
	if st.last == st.head {
		return policy.Changeset{Base: st.last, Head: st.head}, nil
	}
	return r.Source.Compare(ctx, st.last, st.head)
}

// readScope returns the names an incremental run reads of the registry —
// those the changeset touches, those to revisit (retries), those a dead
// letter may hold back — or nil for every entry: a full run, or a run after
// one that did not record the registry's size (an older syncjob, an unclean
// run).
func readScope(st state, cs *policy.Changeset, dead map[string]policy.DeadLetter) []string {
	if cs == nil || st.prev == nil || st.prev.Pending == nil || st.unclean != "" {
		return nil
	}
	return slices.Sorted(maps.Keys(incrementalScope(st, *cs, dead)))
}

// incrementalScope is every name an incremental run plans: those the
// changeset touches, those to revisit, those with a dead letter (so that a
// version one holds back is named every run, not only when a commit
// touches it).
func incrementalScope(st state, cs policy.Changeset, dead map[string]policy.DeadLetter) map[string]bool {
	scope := differ.Touched(cs)
	for _, name := range st.revisit {
		scope[name] = true
	}
	for name := range dead {
		scope[name] = true
	}
	return scope
}

// planFull plans from the head tree against every entry.
func (r *run) planFull(ctx context.Context, st state, known map[string]policy.Known) (map[string]policy.Desired, policy.Plan, error) {
	tree, err := r.Source.Tree(ctx, st.head)
	if err != nil {
		return nil, policy.Plan{}, err
	}
	desired, skipped, conflicts := differ.FromTree(tree, r.opt.differ())
	return desired, differ.Plan(desired, known, nil, skipped, conflicts), nil
}

// planIncremental plans from the changeset, and the head tree for the names
// it cannot decide alone.
func (r *run) planIncremental(ctx context.Context, st state, cs policy.Changeset, reg registryState) (map[string]policy.Desired, policy.Plan, error) {
	dopt := r.opt.differ()
	known := reg.known()
	desired, scope, skipped, conflicts := differ.FromChanges(cs, known, nil, dopt)
	var prevSkipped []policy.Skip
	var prevConflicts []policy.Conflict
	if st.prev != nil {
		prevSkipped, prevConflicts = st.prev.Skipped, st.prev.Conflicts
	}
	// Deletes, retries, dead letters, and names whose skipped or losing
	// paths the changeset does not show are decided from the head tree.
	if differ.NeedsTree(cs) || differ.AddsPaths(cs) || differ.Touches(scope, prevSkipped, prevConflicts) || len(st.revisit) > 0 || len(reg.dead) > 0 {
		tree, err := r.Source.Tree(ctx, st.head)
		if err != nil {
			return nil, policy.Plan{}, err
		}
		scope = incrementalScope(st, cs, reg.dead)
		desired, skipped, conflicts = differ.FromTree(tree, dopt)
		skipped, conflicts = differ.InScope(scope, skipped, conflicts)
	}
	skipped, conflicts = differ.CarryOver(scope, skipped, conflicts, prevSkipped, prevConflicts)
	return desired, differ.Plan(desired, known, scope, skipped, conflicts), nil
}
