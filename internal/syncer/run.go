package syncer

import (
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// run is one run in progress: its identity, options, logger and
// instruments, set once when it starts. Steps take and return values; none
// leaves state here for another to read.
type run struct {
	*Syncer
	opt    Options
	id     string
	start  time.Time
	log    *slog.Logger
	phases *phases
	// request counters at the start, so a reused adapter reports this run only
	baseGitHub int64
	baseUsage  registry.Usage
}

func (s *Syncer) newRun(opt Options) *run {
	id := s.NewRunID
	if id == nil {
		id = newRunID
	}
	r := &run{Syncer: s, opt: opt, id: id(), start: s.now(),
		baseGitHub: s.Source.Requests(), baseUsage: s.Registry.Usage()}
	r.log = s.logger().With(logkey.RunID, r.id, logkey.Trigger, opt.Trigger, logkey.Repo, s.Repo, logkey.Branch, s.Branch)
	if opt.Delivery != "" {
		r.log = r.log.With(logkey.Delivery, opt.Delivery)
	}
	r.phases = newPhases(s.now)
	r.phases.enter("read")
	return r
}

// outcome is what a run did, step by step; record turns it into the run's
// summary.
type outcome struct {
	state        state
	mode, reason string
	lease        lease
	// plan is what the run planned (with titles once read); on a dry run,
	// what it would write.
	plan policy.Plan
	// planned is the plan once titles were read; nil when the run stopped
	// before. applied is what landed: the plan less the items that failed;
	// nil when the run applied nothing.
	planned, applied *policy.Plan
	failures         []policy.Failure
	recordErr        error // failures that could not be recorded for retry
	// owed are the names whose failures this run queued for retry; nil
	// when it did not get that far.
	owed []string
	// newlyDead are the versions this run gave up on: held back from now.
	newlyDead []policy.Skip
	waiting   int // items left for another day by the daily write budget
	size      int // policies in the registry when the run planned
	// legacy are the v1 keys (titles) no policy took the fields of, after
	// the run; nil when it did not plan.
	legacy  []string
	wrote   bool  // the run began writing policies and queue entries
	fullRun bool  // a full run that applied everything
	err     error // why the run stopped
}

// registryState is what the registry holds, read under the lease.
type registryState struct {
	entries map[string]policy.Entry // current entries by policyName
	v1      map[string]policy.Entry // legacy v1 entries by title
	// partial is set when only the names an incremental run touches were
	// read; size is how many policies the registry holds.
	partial bool
	size    int
	dead    map[string]policy.DeadLetter
}

func (s *Syncer) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Syncer) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// logPlan warns of what the plan leaves out: conflicts, skips, v1 entries
// that match no policy.
func (r *run) logPlan(plan policy.Plan, mig differ.Migration) {
	for _, key := range mig.Unmatched {
		r.log.Warn("legacy entry matches no policy title", logkey.Key, policy.PolicyPrefix+key)
	}
	for _, c := range plan.Conflicts {
		r.log.Warn("duplicate policy name", logkey.Policy, c.PolicyName, logkey.Winner, c.Winner, logkey.Losers, c.Losers)
	}
	for _, sk := range plan.Skipped {
		r.log.Warn("file skipped", logkey.Policy, sk.PolicyName, logkey.Path, sk.Path, logkey.Reason, sk.Reason)
	}
}

func sortFailures(f []policy.Failure) []policy.Failure {
	slices.SortFunc(f, func(a, b policy.Failure) int { return strings.Compare(a.PolicyName, b.PolicyName) })
	return f
}

func withoutFailed(p policy.Plan, failures []policy.Failure) policy.Plan {
	failed := make(map[string]bool, len(failures))
	for _, f := range failures {
		failed[f.PolicyName] = true
	}
	p.Items = slices.DeleteFunc(slices.Clone(p.Items), func(it policy.Item) bool { return failed[it.PolicyName] })
	return p
}

// phases times the parts of a run, in milliseconds.
type phases struct {
	now  func() time.Time
	ms   map[string]int64
	cur  string
	from time.Time
}

func newPhases(now func() time.Time) *phases { return &phases{now: now, ms: map[string]int64{}} }

// enter ends the current phase and starts the next ("" ends it).
func (p *phases) enter(phase string) {
	now := p.now()
	if p.cur != "" {
		p.ms[p.cur] += now.Sub(p.from).Milliseconds()
	}
	p.cur, p.from = phase, now
}
