package syncer

import (
	"context"
	"errors"
	"maps"
	"slices"

	"golang.org/x/sync/errgroup"

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

// plan decides what the run writes and reads what it needs to decide: in a
// full run, the head tree against every entry; in an incremental one, the
// compare last...head against the entries of the names it touches (after a
// run that recorded what the registry holds; else every entry), and the head
// tree when the compare cannot say enough (removals, new paths, retries,
// dead letters, names skipped or in conflict). The tree and the registry
// are read at once. The differ then fits the plan to the queue. An
// untrusted compare makes the run full.
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
	tree, reg, err := r.readForPlan(ctx, st, cs)
	if err != nil {
		return p, reg, err
	}
	if cs != nil {
		p.desired, p.plan = r.planIncremental(st, *cs, reg, tree)
		p.renames = differ.Renames(*cs)
	} else {
		p.desired, p.plan = r.planFull(tree, reg.known())
	}
	r.log.Info("mode chosen", logkey.Mode, p.mode, logkey.Reason, p.reason, logkey.Commit, st.head, logkey.Previous, st.last, logkey.Retries, len(st.revisit))
	p.plan, p.work = differ.SettleQueue(p.plan, p.desired, reg.entries, st.pending, reg.dead, r.start)
	return p, reg, nil
}

// readForPlan reads the registry and, when the plan needs it, the head tree
// at once; tree is nil when it is not needed.
func (r *run) readForPlan(ctx context.Context, st state, cs *policy.Changeset) ([]policy.File, registryState, error) {
	var (
		tree []policy.File
		reg  registryState
	)
	names, held := readScope(st, cs)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		reg, err = r.readRegistry(gctx, st, names, held)
		return err
	})
	// When the registry is read whole, which dead letters there are is
	// known only once it is: the tree may be read after it.
	early := cs == nil || (names != nil && needsTree(st, *cs, held))
	if early {
		g.Go(func() (err error) {
			tree, err = r.Source.Tree(gctx, st.head)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, reg, err
	}
	if !early && needsTree(st, *cs, slices.Collect(maps.Keys(reg.dead))) {
		var err error
		if tree, err = r.Source.Tree(ctx, st.head); err != nil {
			return nil, reg, err
		}
	}
	return tree, reg, nil
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
// letter held back at the last run (held, whose dead letters it reads by
// name) — or nil for every entry and every dead letter: a full run, or a
// run after one that did not record the registry's size (an older
// syncjob, an unclean run).
func readScope(st state, cs *policy.Changeset) (names, held []string) {
	if cs == nil || st.prev == nil || st.prev.Pending == nil || st.unclean != "" {
		return nil, nil
	}
	for _, h := range st.prev.HeldBack {
		held = append(held, h.PolicyName)
	}
	// A name whose keys would pass the store's limit has no entry to read
	// (the plan skips it): asking would fail the whole read.
	names = slices.DeleteFunc(slices.Sorted(maps.Keys(incrementalScope(st, *cs, held))), func(n string) bool { return !policy.KeyFits(n) })
	return names, held
}

// incrementalScope is every name an incremental run plans: those the
// changeset touches, those to revisit, those with a dead letter (so that a
// version one holds back is named every run, not only when a commit
// touches it).
func incrementalScope(st state, cs policy.Changeset, dead []string) map[string]bool {
	scope := differ.Touched(cs)
	for _, name := range st.revisit {
		scope[name] = true
	}
	for _, name := range dead {
		scope[name] = true
	}
	return scope
}

// needsTree reports whether an incremental plan needs the head tree:
// deletes, new paths, retries, dead letters, and names whose skipped or
// losing paths the changeset does not show are decided from it.
func needsTree(st state, cs policy.Changeset, dead []string) bool {
	var prevSkipped []policy.Skip
	var prevConflicts []policy.Conflict
	if st.prev != nil {
		prevSkipped, prevConflicts = st.prev.Skipped, st.prev.Conflicts
	}
	return differ.NeedsTree(cs) || differ.AddsPaths(cs) || len(st.revisit) > 0 || len(dead) > 0 ||
		differ.Touches(differ.Touched(cs), prevSkipped, prevConflicts)
}

// planFull plans from the head tree against every entry.
func (r *run) planFull(tree []policy.File, known map[string]policy.Known) (map[string]policy.Desired, policy.Plan) {
	desired, skipped, conflicts := differ.FromTree(tree, r.opt.differ())
	return desired, differ.Plan(desired, known, nil, skipped, conflicts)
}

// planIncremental plans from the changeset, and from the head tree (when
// read) for the names the changeset cannot decide alone.
func (r *run) planIncremental(st state, cs policy.Changeset, reg registryState, tree []policy.File) (map[string]policy.Desired, policy.Plan) {
	dopt := r.opt.differ()
	known := reg.known()
	desired, scope, skipped, conflicts := differ.FromChanges(cs, known, nil, dopt)
	var prevSkipped []policy.Skip
	var prevConflicts []policy.Conflict
	if st.prev != nil {
		prevSkipped, prevConflicts = st.prev.Skipped, st.prev.Conflicts
	}
	if tree != nil {
		scope = incrementalScope(st, cs, slices.Collect(maps.Keys(reg.dead)))
		desired, skipped, conflicts = differ.FromTree(tree, dopt)
		skipped, conflicts = differ.InScope(scope, skipped, conflicts)
	}
	skipped, conflicts = differ.CarryOver(scope, skipped, conflicts, prevSkipped, prevConflicts)
	return desired, differ.Plan(desired, known, scope, skipped, conflicts)
}
