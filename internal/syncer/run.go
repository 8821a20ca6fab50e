package syncer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// Run performs one sync, in these steps: read the state (state.go), choose
// the mode (differ.ChooseMode), take the lease (lease.go; beside it, the
// reads that need not wait for it: early.go), read what the
// plan needs (read.go; on a registry whose reads lag, stale.go), plan (plan.go, through internal/differ), read titles
// (titles.go), guard (differ.Guard), fit the daily write budget
// (budget.go), apply (apply.go), record failures for retry (failures.go)
// — from the plan on once a window, for a large first sync (windows.go) —
// and record the run (record.go). Every step takes and returns values; what
// the record step needs of them is gathered here, in rep. The returned
// error is nil for a success (including "nothing to do"), wraps ErrPartial
// or ErrItemsFailed when items failed, and otherwise says why the run
// aborted; in every case but a dry run the run is recorded. A positive
// opt.MaxDuration gives the run a deadline of its own (deadline.go).
func (s *Syncer) Run(ctx context.Context, opt Options) (Result, error) {
	if opt.MaxDuration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, opt.MaxDuration, maxDurationPassed(opt.MaxDuration))
		defer cancel()
	}
	return s.runSteps(ctx, opt)
}

// maxDurationPassed is the cause of a run's own deadline: a run it stopped
// failed with only "context deadline exceeded", naming neither MAX_DURATION
// nor its value (an adversarial helper). named adds it.
func maxDurationPassed(d time.Duration) error {
	return fmt.Errorf("MAX_DURATION (%s) passed: %w", d, context.DeadlineExceeded)
}

// named is err saying, when the run's own deadline cut it, that
// MAX_DURATION did.
func named(ctx context.Context, err error) error {
	cause := context.Cause(ctx)
	if err == nil || ctx.Err() == nil || cause == ctx.Err() || !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), cause.Error()) {
		return err
	}
	return fmt.Errorf("%w (%v)", err, cause)
}

// runSteps is Run's steps, in order.
func (s *Syncer) runSteps(ctx context.Context, opt Options) (res Result, err error) {
	r := s.newRun(ctx, opt.withDefaults())
	rep := report{mirror: r.newMirrorRun()}
	defer func(ctx context.Context) { res, err = r.finish(ctx, rep, err) }(ctx) // every return records the run
	if rep.state, err = r.readState(ctx); err != nil {
		return
	}
	if rep.state, err = r.refuse(ctx, rep.state); err != nil {
		return
	}
	mode, reason := r.chooseMode(rep.state)
	if mode == differ.ModeUnchanged {
		err = r.unchanged(&rep)
		return
	}
	r.phases.enter("plan")
	if rep.state, rep.lease, rep.ahead, err = r.leaseStep(ctx, rep.state, mode); err != nil {
		return
	}
	ctx, stop := r.keepLease(ctx, rep.lease)
	defer func() { err = stopped(ctx, err); stop() }() // runs before the record
	var in readForPlan
	if rep.state, in, err = r.readSettled(ctx, rep.state, mode, reason, rep.ahead); err != nil {
		return
	}
	rep.mode, rep.reason, rep.size, rep.unverified = in.mode, in.reason, in.reg.size, in.unverified // an untrusted compare makes the run full
	if in, err = r.windowsOrWhole(ctx, rep.state, in, rep.mirror); err != nil {
		return
	}
	windows, base := in.windows, r.Registry.Usage().Writes
	if err = r.pass(ctx, &rep, &in, 0); err != nil || r.opt.DryRun {
		return
	}
	if windows != nil { // a first sync in windows (windows.go): that was the first
		if err = r.laterWindows(ctx, &rep, in.reg, windows, base); err != nil {
			return
		}
	}
	return res, abortErr(ctx)
}

// pass is the steps from the plan to the failures' record, over what in
// read: the whole run's, or one window's of a first sync in windows
// (windows.go). own is what the windows before it wrote, for the budget.
func (r *run) pass(ctx context.Context, rep *report, in *readForPlan, own int64) error {
	p := r.plan(rep.state, in)
	rep.plan = p.plan
	if err := r.mirrorPlan(ctx, rep.mirror, rep.state, rep.mode, in.reg, p.desired, p.plan); err != nil { // before the titles step uploads
		return err
	}
	t, err := r.titles(ctx, rep.state, *in, p.forTitles(), rep.mirror)
	if rep.plan, p.plan = t.plan, t.unread; err != nil { // the titles are in the planned items' own array: all that is kept as planned is what could not be read (docs/bench.md)
		return err
	}
	rep.titled = &t
	if err = r.guard(t.plan, in.reg, p.renames); err != nil {
		return err
	}
	rep.mirror.keepRepairs(t.plan, in.reg)
	if r.opt.DryRun {
		rep.failures = t.failures
		return nil
	}
	if err = outage(t.files, t.failures); err != nil {
		return err
	}
	plan, waiting, err := r.fitBudget(ctx, rep.state, rep.mode, t.plan, p.work, len(t.failures), rep.mirror, own)
	if rep.waiting = waiting; err != nil {
		return err
	}
	rep.wrote = true
	failed, waits, err := r.applyAll(ctx, rep.state.head, plan, *in, t, p.work, rep.mirror)
	if err != nil {
		return err
	}
	rep.settle(plan, *in, p.work, append(t.failures, failed...), append(waits, t.late...))
	rep.retried = r.recordFailures(ctx, t.plan, p.plan, rep.failures, rep.state.pending) // as planned: an unread item is no longer in t.plan
	return nil
}

// report is what the record step takes: what each step returned, as far as
// the run got.
type report struct {
	state        state
	mode, reason string
	unverified   string // why reads were trusted unwaited (stale.go): not a success
	lease        lease
	size         int         // policies in the registry when the run planned
	plan         policy.Plan // the latest plan: Result.Plan
	// titled is the plan with its titles, guarded (on a dry run, what it
	// would write); nil when the run stopped before.
	titled  *titled
	waiting int // items left for another day by the daily write budget, or for the next run by the deadline
	// late names the items the run had no time for (deadline.go), sorted
	late []string
	// cutShort says the deadline stopped a first sync in windows before
	// its last (windows.go); unreached counts the policy files of the
	// windows it did not reach, in waiting too
	cutShort  bool
	unreached int
	wrote     bool // the run began writing policies and queue entries
	// failures are the items that failed (on a dry run, those unread);
	// applied is the plan less them: nil when the run applied nothing.
	failures []policy.Failure
	applied  *policy.Plan
	retried  *retried   // nil when the run stopped before recording failures
	orphans  *int       // orphan queue entries a full run left (orphans.go); nil: not known
	mirror   *mirrorRun // the content mirror's part (mirror.go); nil without one
	// ahead are the reads started before the step that takes them
	// (early.go); finish drops what none took
	ahead *readAhead
}

// finish records the run (record.go) and says what Run returns.
func (r *run) finish(ctx context.Context, rep report, err error) (Result, error) {
	err = named(ctx, err)
	rep.ahead.drop()
	sum := r.record(ctx, rep, err)
	return Result{Summary: sum, Plan: rep.plan}, runError(sum, err)
}

// chooseMode is the mode step: the mode the state asks for, and why.
func (r *run) chooseMode(st state) (mode, reason string) {
	defer func() { mode, reason = r.mirrorMode(mode, reason, st.prev) }()
	mode, reason = differ.ChooseMode(differ.ModeInput{
		Full: r.opt.Full, Last: st.last, Head: st.head, Previous: st.prev,
		Pending: len(st.revisit), Unclean: st.unclean,
		Now: r.start, ReconcileInterval: r.opt.ReconcileInterval,
		Reconciles: r.opt.Trigger == TriggerSchedule || r.opt.Trigger == TriggerCLI,
	})
	if mode == differ.ModeUnchanged {
		r.log.Info("head unchanged", logkey.Commit, st.head)
	}
	return mode, reason
}

// unchanged ends a run on an unchanged head. When another run holds the
// lease, a run that would take one is refused instead: what it read may be
// from before that run's writes (a stale read), so it cannot say the
// registry is as it was, and its record must not replace the one that run
// will leave (an unclean run's, say). It records its history only, as a
// run the lease refuses. A dry run records nothing and takes no lease.
func (r *run) unchanged(rep *report) error {
	rep.mode = differ.ModeUnchanged
	if !rep.state.live || r.opt.DryRun || r.opt.LeaseTTL <= 0 {
		return nil
	}
	rep.lease.refused = true
	return &registry.LeaseHeldError{Held: *rep.state.lease}
}

// guard is the mass-delete guard step (differ.GuardWithin): the delete
// limit, and what the operator allowed past it.
func (r *run) guard(plan policy.Plan, reg registryState, renames map[string]string) error {
	return differ.GuardWithin(plan, reg.entries, renames, reg.size, r.opt.deleteLimit(), r.opt.allowDeletes())
}

// outage says whether every read of files failed (see ErrOutage): a run
// that could read none of what it must write does not apply.
func outage(files int, failures []policy.Failure) error {
	if files == 0 || len(failures) < files {
		return nil
	}
	return fmt.Errorf("%w: all %d file reads failed, e.g. %s: %s", ErrOutage, files, failures[0].PolicyName, failures[0].Error)
}

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
	baseMirror mirror.Stats
	made       func(n int) // told of the registry writes made and let go (writes.go); nil: none
}

// newRun starts a run; ctx may carry a test's watch of the writes made
// (WatchWrites).
func (s *Syncer) newRun(ctx context.Context, opt Options) *run {
	id := s.NewRunID
	if id == nil {
		id = newRunID
	}
	r := &run{Syncer: s, opt: opt, id: id(), start: s.now(),
		baseGitHub: s.Source.Requests(), baseUsage: s.Registry.Usage()}
	if s.Mirror != nil {
		r.baseMirror = s.Mirror.Stats()
	}
	r.log = s.logger().With(logkey.RunID, r.id, logkey.Trigger, opt.Trigger, logkey.Repo, s.Repo, logkey.Branch, s.Branch)
	if opt.Delivery != "" {
		r.log = r.log.With(logkey.Delivery, opt.Delivery)
	}
	r.phases = newPhases(s.now, s.progress())
	if s.Mirror == nil {
		r.phases.untold = map[string]bool{"mirror": true} // timed, but nothing to watch
	}
	r.made, _ = ctx.Value(madeKey{}).(func(int))
	r.phases.enter("read")
	return r
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

// phases times the parts of a run, in milliseconds, and tells a Progress
// each one it enters.
type phases struct {
	now func() time.Time
	to  Progress
	// untold are the phases timed but not told to the Progress
	untold map[string]bool
	ms     map[string]int64
	cur    string
	from   time.Time
}

func newPhases(now func() time.Time, to Progress) *phases {
	return &phases{now: now, to: to, ms: map[string]int64{}}
}

// enter ends the current phase and starts the next ("" ends it).
func (p *phases) enter(phase string) {
	now := p.now()
	if p.cur != "" {
		p.ms[p.cur] += now.Sub(p.from).Milliseconds()
	}
	p.cur, p.from = phase, now
	if name, ok := progressPhases[phase]; ok && !p.untold[phase] {
		p.to.Phase(name)
	}
}

// refuse is the check before the mode: the head an operator pinned a
// reviewed plan to (expectHead), and the repository and branch the registry
// was synced from (rewind.go), read again after the consistency window
// before a retarget is refused on a registry whose reads lag (settleTarget).
func (r *run) refuse(ctx context.Context, st state) (state, error) {
	err := r.refusal(st)
	if !errors.Is(err, ErrRewind) || !r.waitsForTarget(ctx) {
		return st, err
	}
	fresh, err := r.settleTarget(ctx)
	if err != nil {
		// the state first read, which names the registry's target: a
		// failed run records it, not its own (review: a Ctrl-C during
		// the wait recorded the wrong branch, and the next run synced it)
		return st, err
	}
	return fresh, r.refusal(fresh)
}

// refusal is refuse's checks of st as read.
func (r *run) refusal(st state) error {
	if err := expectHead(r.opt.ExpectHead, st.head); err != nil {
		return err
	}
	return r.checkTarget(st)
}

// applyAll is the apply step: the content mirror's objects first
// (mirror.go), then the registry's writes (apply.go), which leave out a
// policy whose object did not land.
func (r *run) applyAll(ctx context.Context, head string, plan policy.Plan, in readForPlan, t titled, work differ.QueueWork, m *mirrorRun) ([]policy.Failure, []string, error) {
	r.phases.enter("mirror")
	mirrorFailed, err := r.mirrorUpload(ctx, m, head, plan, in.reg)
	if err != nil { // the store failed every upload: nothing is written
		return nil, nil, err
	}
	r.phases.enter("apply")
	return r.apply(ctx, plan, in.reg, t.mig, work, m, mirrorFailed)
}

// settle keeps what the apply step leaves for the record: the failures,
// what waits for the next run, the queue orphans left, and the plan less
// what failed or waits.
func (rep *report) settle(plan policy.Plan, in readForPlan, work differ.QueueWork, failures []policy.Failure, late []string) {
	rep.failures = sortFailures(failures)
	rep.late = late
	slices.Sort(rep.late)
	rep.waiting += len(late)
	rep.orphans = orphansLeft(in, work.Orphans, rep.failures)
	applied := withoutFailed(plan, rep.failures, late)
	rep.applied = &applied
}
