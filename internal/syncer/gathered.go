package syncer

import (
	"cmp"
	"slices"
	"strings"

	"github.com/knue/syncjob/internal/policy"
)

// gathered is what a first sync's windows did (windows.go), as the record
// needs it: counts and short lists, not every item. Its strings are
// copies, so that a window's tree is let go once the window ends.
type gathered struct {
	planned, applied *policy.Plan // compact: see compactInto
	failures         []policy.Failure
	late             []string
	waiting          int
	retried          *retried
	unreached        int  // policy files of the windows the run did not reach
	cutShort         bool // the deadline stopped the windows
}

// fold takes what rep holds of one window, leaving rep for the next.
func (g *gathered) fold(rep *report) {
	if rep.titled != nil {
		g.planned = compactInto(g.planned, rep.titled.plan)
	}
	if rep.applied != nil {
		g.applied = compactInto(g.applied, *rep.applied)
	}
	for _, f := range rep.failures {
		g.failures = append(g.failures, policy.Failure{PolicyName: strings.Clone(f.PolicyName), Error: f.Error})
	}
	for _, name := range rep.late {
		g.late = append(g.late, strings.Clone(name))
	}
	g.waiting += rep.waiting
	if rt := rep.retried; rt != nil {
		if g.retried == nil {
			g.retried = &retried{owed: []string{}} // none owed, not unknown (differ.ReadScope)
		}
		for _, name := range rt.owed {
			g.retried.owed = append(g.retried.owed, strings.Clone(name))
		}
		g.retried.newlyDead = append(g.retried.newlyDead, detachSkips(rt.newlyDead)...)
		g.retried.err = cmp.Or(g.retried.err, rt.err)
	}
	dropWindow(rep)
}

// dropWindow lets go of what rep holds of one window: folded, or not
// applied (the deadline cut its reads, its files counted as not reached).
func dropWindow(rep *report) {
	rep.mirror.endWindow(rep.applied)
	rep.plan, rep.titled, rep.applied, rep.failures, rep.late, rep.waiting, rep.retried = policy.Plan{}, nil, nil, nil, nil, 0, nil
}

// restore puts into rep what the windows did, for the record.
func (g *gathered) restore(rep *report) {
	if g.planned != nil {
		sortKnown(g.planned)
		rep.titled = &titled{plan: *g.planned}
		rep.plan = *g.planned
	}
	if g.applied != nil {
		applied := *g.applied
		rep.applied = &applied
	}
	rep.failures = sortFailures(g.failures)
	slices.Sort(g.late)
	rep.late = g.late
	rep.waiting, rep.unreached = g.waiting+g.unreached, g.unreached
	if g.retried != nil {
		slices.Sort(g.retried.owed) // as a whole run's
	}
	rep.retried = g.retried
	rep.cutShort = g.cutShort
}

// sortKnown sorts a plan's skips, versions held back and conflicts by
// name, as a whole plan's are (differ.FromTree), not window by window.
func sortKnown(p *policy.Plan) {
	bySkip := func(a, b policy.Skip) int {
		return cmp.Or(strings.Compare(a.PolicyName, b.PolicyName), strings.Compare(a.Path, b.Path))
	}
	slices.SortStableFunc(p.Skipped, bySkip)
	slices.SortStableFunc(p.HeldBack, bySkip)
	slices.SortStableFunc(p.Conflicts, func(a, b policy.Conflict) int { return strings.Compare(a.PolicyName, b.PolicyName) })
}

// compactInto adds plan p to acc (nil: an empty plan): its skips,
// conflicts and versions held back, its unchanged count, and of its
// changes the first policy.MaxRunChanges of both by name (puts before
// deletes, as a plan orders them), copied; acc.Omitted counts the rest.
func compactInto(acc *policy.Plan, p policy.Plan) *policy.Plan {
	if acc == nil {
		acc = &policy.Plan{Omitted: &policy.Counts{}}
	}
	acc.Unchanged += p.Unchanged
	acc.Skipped = append(acc.Skipped, detachSkips(p.Skipped)...)
	acc.HeldBack = append(acc.HeldBack, detachSkips(p.HeldBack)...)
	for _, c := range p.Conflicts {
		acc.Conflicts = append(acc.Conflicts, policy.Conflict{PolicyName: strings.Clone(c.PolicyName), Winner: strings.Clone(c.Winner), Losers: cloneAll(c.Losers)})
	}
	if o := p.Omitted; o != nil {
		acc.Omitted.Added += o.Added
		acc.Omitted.Updated += o.Updated
		acc.Omitted.Moved += o.Moved
		acc.Omitted.Deleted += o.Deleted
		acc.Omitted.Migrated += o.Migrated
	}
	// the first MaxRunChanges of p's changes, by index: p may hold a
	// window's every item
	var first []int
	for i, it := range p.Items {
		if it.Action == policy.ActMigrate {
			omit(acc.Omitted, it.Action)
			continue
		}
		first = append(first, i)
	}
	slices.SortFunc(first, func(a, b int) int { return changeOrder(p.Items[a], p.Items[b]) })
	for n, i := range first {
		if n >= policy.MaxRunChanges {
			omit(acc.Omitted, p.Items[i].Action)
			continue
		}
		acc.Items = append(acc.Items, detachItem(p.Items[i]))
	}
	slices.SortFunc(acc.Items, changeOrder)
	for _, it := range acc.Items[min(len(acc.Items), policy.MaxRunChanges):] {
		omit(acc.Omitted, it.Action)
	}
	acc.Items = slices.Clip(acc.Items[:min(len(acc.Items), policy.MaxRunChanges)])
	return acc
}

// changeOrder orders changes as a plan does: puts before deletes, each by
// name.
func changeOrder(a, b policy.Item) int {
	return cmp.Or(cmp.Compare(boolInt(a.Action == policy.ActDelete), boolInt(b.Action == policy.ActDelete)), strings.Compare(a.PolicyName, b.PolicyName))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// omit counts one change not held.
func omit(c *policy.Counts, a policy.Action) {
	switch a {
	case policy.ActAdd:
		c.Added++
	case policy.ActUpdate:
		c.Updated++
	case policy.ActMove:
		c.Moved++
	case policy.ActDelete:
		c.Deleted++
	case policy.ActMigrate:
		c.Migrated++
	}
}

// detachItem is it with strings of its own.
func detachItem(it policy.Item) policy.Item {
	it.PolicyName, it.Path, it.SHA, it.Title = strings.Clone(it.PolicyName), strings.Clone(it.Path), strings.Clone(it.SHA), strings.Clone(it.Title)
	if it.Old != nil {
		it.Old = &policy.Old{Path: strings.Clone(it.Old.Path), SHA: strings.Clone(it.Old.SHA)}
	}
	return it
}

func detachSkips(skips []policy.Skip) []policy.Skip {
	out := make([]policy.Skip, len(skips))
	for i, sk := range skips {
		out[i] = policy.Skip{PolicyName: strings.Clone(sk.PolicyName), Path: strings.Clone(sk.Path), Reason: strings.Clone(sk.Reason)}
	}
	return out
}

func cloneAll(names []string) []string {
	out := make([]string, len(names))
	for i, name := range names {
		out[i] = strings.Clone(name)
	}
	return out
}
