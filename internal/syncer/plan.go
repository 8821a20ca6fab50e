package syncer

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/policy"
)

// plan decides what the run writes: in a full run from the head tree; in an
// incremental one from the compare last...head, reading the head tree when
// the compare cannot say enough (removals, new paths, retries, names skipped
// or in conflict). An untrusted compare turns the run full.
func (r *run) plan(ctx context.Context, mode, reason, last, head string, known map[string]policy.Known) (policy.Plan, map[string]policy.Desired, error) {
	var (
		desired   map[string]policy.Desired
		scope     map[string]bool
		skipped   []policy.Skip
		conflicts []policy.Conflict
		dopt      = differ.Options{MaxFileSize: r.opt.MaxFileSize}
	)
	if mode == ModeIncremental {
		var (
			cs  policy.Changeset
			err error
		)
		if last != head {
			cs, err = r.Source.Compare(ctx, last, head)
		}
		switch {
		case errors.Is(err, policy.ErrCompareUntrusted):
			mode, reason = ModeFull, err.Error()
		case err != nil:
			return policy.Plan{}, nil, err
		default:
			desired, scope, skipped, conflicts = differ.FromChanges(cs, known, nil, dopt)
			// Deletes, retries, and names whose skipped or losing paths the
			// changeset does not show are decided from the head tree.
			if differ.NeedsTree(cs) || addsPaths(cs) || r.touchesCarried(scope) || len(r.pending) > 0 {
				tree, err := r.Source.Tree(ctx, head)
				if err != nil {
					return policy.Plan{}, nil, err
				}
				for name := range r.pending {
					scope[name] = true
				}
				desired, skipped, conflicts = differ.FromTree(tree, dopt)
				skipped, conflicts = inScope(scope, skipped, conflicts)
			}
			skipped, conflicts = r.carryOver(scope, skipped, conflicts)
		}
	}
	if mode == ModeFull {
		tree, err := r.Source.Tree(ctx, head)
		if err != nil {
			return policy.Plan{}, nil, err
		}
		desired, skipped, conflicts = differ.FromTree(tree, dopt)
	}
	r.sum.Mode, r.sum.ModeReason = mode, reason
	r.log.Info("mode chosen", KeyMode, mode, KeyReason, reason, KeyCommit, head, KeyPrevious, last, "retries", len(r.pending))
	return differ.Plan(desired, known, scope, skipped, conflicts), desired, nil
}

// addsPaths reports whether the changeset brings a policy path that was not
// there: the compare does not say whether it is a regular file, a symlink or
// a submodule, the head tree does.
func addsPaths(cs policy.Changeset) bool {
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

// inScope keeps the skips and conflicts of the names in scope.
func inScope(scope map[string]bool, skipped []policy.Skip, conflicts []policy.Conflict) ([]policy.Skip, []policy.Conflict) {
	skipped = slices.DeleteFunc(skipped, func(s policy.Skip) bool { return !scope[s.PolicyName] })
	conflicts = slices.DeleteFunc(conflicts, func(c policy.Conflict) bool { return !scope[c.PolicyName] })
	return skipped, conflicts
}

// chooseMode decides the mode from the stored commit and the last run.
func (r *run) chooseMode(last, head string) (mode, reason string) {
	switch {
	case r.opt.Full:
		return ModeFull, "requested"
	case last == "":
		return ModeFull, "first run"
	case r.prev == nil || r.prev.LastFullRun == "":
		if last == head && len(r.pending) == 0 {
			return ModeUnchanged, ""
		}
		return ModeFull, "no full run recorded"
	}
	if t, err := time.Parse(time.RFC3339, r.prev.LastFullRun); err != nil || r.start.Sub(t) > r.opt.ReconcileInterval {
		return ModeFull, "reconcile interval passed"
	}
	switch {
	case last != head:
		return ModeIncremental, ""
	case len(r.pending) > 0:
		return ModeIncremental, "retry"
	}
	return ModeUnchanged, ""
}

// touchesCarried reports whether the changeset touches a name that the last
// run skipped or found in conflict.
func (r *run) touchesCarried(scope map[string]bool) bool {
	for _, sk := range r.sum.Skipped {
		if scope[sk.PolicyName] {
			return true
		}
	}
	for _, c := range r.sum.Conflicts {
		if scope[c.PolicyName] {
			return true
		}
	}
	return false
}

// carryOver adds the last run's skips and conflicts of the names this
// incremental run did not look at: they still hold, and are reported every run.
func (r *run) carryOver(scope map[string]bool, skipped []policy.Skip, conflicts []policy.Conflict) ([]policy.Skip, []policy.Conflict) {
	for _, sk := range r.sum.Skipped {
		if !scope[sk.PolicyName] {
			skipped = append(skipped, sk)
		}
	}
	for _, c := range r.sum.Conflicts {
		if !scope[c.PolicyName] {
			conflicts = append(conflicts, c)
		}
	}
	slices.SortFunc(skipped, func(a, b policy.Skip) int { return strings.Compare(a.Path, b.Path) })
	slices.SortFunc(conflicts, func(a, b policy.Conflict) int { return strings.Compare(a.PolicyName, b.PolicyName) })
	return skipped, conflicts
}
