package syncer

import (
	"context"
	"errors"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
)

// planned is what the planning step decided.
type planned struct {
	mode, reason string // the mode the run took (an untrusted compare makes it full)
	plan         policy.Plan
	work         differ.QueueWork
	// renames are the policy names git reports renamed by the compare, old
	// name → new name, for the mass-delete guard.
	renames map[string]string
}

// plan decides what the run writes: in a full run from the head tree; in an
// incremental one from the compare last...head, reading the head tree when
// the compare cannot say enough (removals, new paths, retries, names skipped
// or in conflict). The differ then fits the plan to the queue.
func (r *run) plan(ctx context.Context, st state, mode, reason string, reg registryState) (planned, error) {
	p := planned{mode: mode, reason: reason}
	known := reg.known()
	var (
		desired map[string]policy.Desired
		err     error
	)
	if mode == ModeIncremental {
		desired, p.plan, p.renames, err = r.planIncremental(ctx, st, known)
		if errors.Is(err, policy.ErrCompareUntrusted) {
			p.mode, p.reason, err = ModeFull, err.Error(), nil
		}
		if err != nil {
			return p, err
		}
	}
	if p.mode == ModeFull {
		tree, err := r.Source.Tree(ctx, st.head)
		if err != nil {
			return p, err
		}
		var skipped []policy.Skip
		var conflicts []policy.Conflict
		desired, skipped, conflicts = differ.FromTree(tree, r.opt.differ())
		p.plan = differ.Plan(desired, known, nil, skipped, conflicts)
	}
	r.log.Info("mode chosen", logkey.Mode, p.mode, logkey.Reason, p.reason, logkey.Commit, st.head, logkey.Previous, st.last, logkey.Retries, len(st.pending))
	p.plan, p.work = differ.SettleQueue(p.plan, desired, reg.entries, st.pending, reg.dead, r.start)
	return p, nil
}

// planIncremental plans from the compare last...head; an error wrapping
// policy.ErrCompareUntrusted means a full run must plan instead.
func (r *run) planIncremental(ctx context.Context, st state, known map[string]policy.Known) (map[string]policy.Desired, policy.Plan, map[string]string, error) {
	var cs policy.Changeset
	if st.last != st.head {
		var err error
		if cs, err = r.Source.Compare(ctx, st.last, st.head); err != nil {
			return nil, policy.Plan{}, nil, err
		}
	}
	dopt := r.opt.differ()
	desired, scope, skipped, conflicts := differ.FromChanges(cs, known, nil, dopt)
	var prevSkipped []policy.Skip
	var prevConflicts []policy.Conflict
	if st.prev != nil {
		prevSkipped, prevConflicts = st.prev.Skipped, st.prev.Conflicts
	}
	// Deletes, retries, and names whose skipped or losing paths the
	// changeset does not show are decided from the head tree.
	if differ.NeedsTree(cs) || differ.AddsPaths(cs) || differ.Touches(scope, prevSkipped, prevConflicts) || len(st.pending) > 0 {
		tree, err := r.Source.Tree(ctx, st.head)
		if err != nil {
			return nil, policy.Plan{}, nil, err
		}
		for name := range st.pending {
			scope[name] = true
		}
		desired, skipped, conflicts = differ.FromTree(tree, dopt)
		skipped, conflicts = differ.InScope(scope, skipped, conflicts)
	}
	skipped, conflicts = differ.CarryOver(scope, skipped, conflicts, prevSkipped, prevConflicts)
	return desired, differ.Plan(desired, known, scope, skipped, conflicts), differ.Renames(cs), nil
}
