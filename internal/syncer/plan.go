package syncer

import (
	"maps"
	"slices"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
)

// planned is what the plan step decided.
type planned struct {
	plan    policy.Plan
	desired differ.Desired // what the head wants, with the tree's sizes
	work    differ.QueueWork
	// renames are the policy names git reports renamed by the compare, old
	// name → new name, for the mass-delete guard.
	renames map[string]string
}

// plan is the plan step, pure (internal/differ): from the head tree against
// every entry in a full run, from the changeset (and the tree, when read)
// in an incremental one; then fitted to the queue (differ.SettleQueue). It
// takes the tree out of in, so that nothing holds it once it is grouped.
func (r *run) plan(st state, in *readForPlan) planned {
	var p planned
	known := in.reg.entries // the plan reads their paths and shas: no map of its own beside them (docs/bench.md, "A full run's memory")
	tree := in.tree
	in.tree = nil // not needed again: planning lets go of it once the files are grouped by name (200,000 files: 8.6 MB)
	if in.cs != nil {
		dead := slices.Collect(maps.Keys(in.reg.dead))
		p.desired, p.plan = differ.PlanIncremental(st.before(), *in.cs, known, dead, tree, r.opt.differ())
		p.renames = differ.Renames(*in.cs)
	} else {
		p.desired, p.plan = differ.PlanFull(tree, known, r.opt.differ())
	}
	p.plan = differ.Distrust(p.plan, p.desired, known, in.touched)
	r.log.Info("mode chosen", logkey.Mode, in.mode, logkey.Reason, in.reason, logkey.Commit, st.head, logkey.Previous, st.last, logkey.Retries, len(st.revisit))
	p.plan, p.work = differ.SettleQueue(p.plan, p.desired, in.reg.entries, st.pending, in.reg.dead, r.start)
	if in.reg.queued != nil {
		p.work = differ.RepairQueue(p.plan, p.work, in.reg.entries, st.pending, in.reg.queued, r.start)
	}
	differ.Size(p.plan, p.desired) // the titles step then needs no desired policies
	return p
}

// forTitles is the plan for the titles step, which does not need the
// desired policies (the items carry their files' sizes, differ.Size; the
// mirror's plan step, which uses them, came before): they are let go
// before the files to read are listed (200,000 policies: 11 MB, held beside
// those files and the items where a first sync's heap peaked; docs/bench.md,
// "How we got here", "Memory, ninth pass").
func (p *planned) forTitles() planned {
	p.desired = nil
	return *p
}
