package syncer

import (
	"context"
	"fmt"
	"slices"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// titled is the plan once the titles step read what it needs.
type titled struct {
	plan     policy.Plan      // with titles, skips, and legacy fields carried
	failures []policy.Failure // files that could not be read
	// files is how many files the step read (or tried to); unread are the
	// items whose files could not be read, as planned: the planned items
	// are not held beside the titled ones, which are in their array.
	files  int
	unread policy.Plan
	mig    differ.Migration
	// legacy are the v1 keys (titles) no policy took the fields of, after
	// the run.
	legacy []string
	// late are the adds and updates whose files the read did not reach
	// before its cutoff (deadline.go): left for the next run
	late []string
}

// titles is the titles step: it reads the content of every add and update
// to take its title (differ.Titling, in the plan's own items: the caller
// lets go of p.plan), the legacy v1 entries those titles
// match when the run read only what it touches, and carries their fields
// (differ.Migrate). On an error, plan is the plan as far as it got.
func (r *run) titles(ctx context.Context, st state, in readForPlan, p planned, m *mirrorRun) (titled, error) {
	r.phases.enter("fetch")
	reg := in.reg
	up := r.titlesUploader(ctx, m, p.plan, reg, p.renames)
	t, err := r.readTitles(ctx, st.head, p.plan, reg.entries, up)
	if err != nil {
		return t, err
	}
	plan := t.plan
	v1 := reg.v1 // a run that read only what it touches: the v1 keys among those names (a removal to retry)
	if reg.partial {
		more, err := r.readV1(ctx, plan, st.prev.LegacyV1)
		if err != nil {
			return titled{plan: plan}, err
		}
		v1 = differ.WithV1(v1, more)
	}
	t.plan, t.mig = differ.Migrate(plan, reg.entries, v1, in.mode == differ.ModeFull, r.start)
	var last []string
	if reg.partial { // then the last run said what was left
		last = st.prev.LegacyV1
	}
	t.legacy = differ.LegacyLeft(reg.partial, last, v1, t.mig)
	r.logPlan(t.plan, t.mig)
	return t, nil
}

// readTitles reads the content of every add and update to take its title,
// written into its item as the read delivers it; the differ turns empty
// and oversized content into skips and unreadable files into failures
// (never deletes). A run with a deadline stops reading at its cutoff
// (readUntil): late names what it did not reach, left out of the plan for
// the next run (differ.Titling.LeaveUnreached). An error aborts the run (a
// rate limit, a configuration error, the context); the plan is then the
// planned one, with what titles were read.
func (r *run) readTitles(ctx context.Context, head string, plan policy.Plan, entries map[string]policy.Entry, up *uploader) (titled, error) {
	files := differ.Unread(plan)
	t := titled{files: len(files)}
	ti := differ.NewTitling(plan, r.opt.differ())
	var readErrs map[string]error
	if len(files) > 0 {
		r.log.Info("reading contents", logkey.Files, len(files))
		var (
			cut bool
			err error
		)
		readErrs, cut, err = r.readBeforeCutoff(ctx, head, files, up, ti.Put)
		if err != nil && (!cut || !isContextErr(err)) { // a rate limit at the cutoff still aborts
			t.plan = plan
			return t, err
		}
		if cut {
			readErrs = withoutCut(readErrs)
			t.late = ti.LeaveUnreached(readErrs)
			r.log.Warn("out of time: files left unread for the next run", logkey.Waiting, len(t.late), logkey.WaitingPolicies, firstNames(t.late))
		}
	}
	t.plan, t.failures, t.unread.Items = ti.Done(plan, readErrs, entries)
	for _, f := range t.failures {
		r.log.Warn("content unreadable", logkey.Policy, f.PolicyName, logkey.Error, f.Error)
	}
	return t, nil
}

// readV1 reads, for a run that read only the entries it touches, the legacy
// v1 entries (keyed by title) whose fields a policy this run writes takes:
// those of the titles the last full run found unmatched (legacy) that a put
// of the plan now has.
func (r *run) readV1(ctx context.Context, plan policy.Plan, legacy []string) (map[string]policy.Entry, error) {
	var titles []string
	for _, it := range plan.Items {
		if it.Action != policy.ActDelete && slices.Contains(legacy, it.Title) {
			titles = append(titles, it.Title)
		}
	}
	if len(titles) == 0 {
		return nil, nil
	}
	all, problems, err := r.Registry.Entries(ctx, titles)
	if err != nil {
		return nil, fmt.Errorf("read legacy entries: %w", err)
	}
	for key, perr := range problems {
		r.log.Warn("registry entry unreadable", logkey.Key, key, logkey.Error, perr)
	}
	_, v1 := differ.SplitV1(all)
	return v1, nil
}

// logPlan warns of what the plan leaves out: conflicts, skips, v1 entries
// that match no policy.
func (r *run) logPlan(plan policy.Plan, mig differ.Migration) {
	for _, key := range mig.Unmatched {
		r.log.Warn("legacy entry matches no policy title", logkey.Key, registry.PolicyKey(key))
	}
	for _, c := range plan.Conflicts {
		r.log.Warn("duplicate policy name", logkey.Policy, c.PolicyName, logkey.Winner, c.Winner, logkey.Losers, c.Losers)
	}
	for _, sk := range plan.Skipped {
		r.log.Warn("file skipped", logkey.Policy, sk.PolicyName, logkey.Path, sk.Path, logkey.Reason, sk.Reason)
	}
}
