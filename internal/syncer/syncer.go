package syncer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// Source is what the repository holds (internal/github implements it).
type Source interface {
	// Head returns the branch head commit in one request. Errors wrap
	// policy.ErrConfig (unknown repository or branch) or policy.ErrRateLimited.
	Head(ctx context.Context) (string, error)
	// Tree returns every regular file of the commit, complete even when GitHub truncates.
	Tree(ctx context.Context, commit string) ([]policy.File, error)
	// Compare returns base...head; errors wrap policy.ErrCompareUntrusted when a
	// full run is needed instead.
	Compare(ctx context.Context, base, head string) (policy.Changeset, error)
	// Contents reads files at commit: contents by path, per-path failures, and
	// an error only when the whole read must abort (rate limit, configuration).
	Contents(ctx context.Context, commit string, files []policy.File) (map[string][]byte, map[string]error, error)
	// Requests is the number of HTTP requests made so far.
	Requests() int64
}

// Modes of a run.
const (
	ModeFull        = "full"
	ModeIncremental = "incremental"
	ModeUnchanged   = "unchanged"
)

// Options of one run.
type Options struct {
	Full              bool
	DryRun            bool
	Trigger           string        // "cli", "schedule", "manual"
	MaxFileSize       int64         // 0 → policy.DefaultMaxFileSize
	BatchSize         int           // registry pairs per batch; 0 → 50
	Concurrency       int           // batches in flight; 0 → 4
	ReconcileInterval time.Duration // full run when the last one is older; 0 → 7 days
	AllowMassDelete   bool          // let a plan through the mass-delete guard
	DailyWriteBudget  int64         // billable writes a UTC day may spend; 0 = no budget
	LeaseTTL          time.Duration // take the advisory single-writer lease for this long; 0 = none
	LeaseOwner        string        // who holds it: the run id by default; a Lambda request id survives Lambda's retries
}

// Syncer holds the adapters of a run. It carries no state between runs.
type Syncer struct {
	Source   Source
	Registry *registry.Registry
	Repo     string // owner/name, for logs and the summary
	Branch   string
	Logger   *slog.Logger
	Now      func() time.Time
	NewRunID func() string
}

// Result is what a run did (or, on a dry run, would do).
type Result struct {
	Summary policy.RunSummary
	Plan    policy.Plan
}

// Outcomes of a run that completed with failed items: ErrPartial when every
// failure is recorded for retry (lastCommit advanced), ErrItemsFailed when
// not (lastCommit stays, the next run sees the changes again).
var (
	ErrPartial     = errors.New("partial: failures recorded for retry")
	ErrItemsFailed = errors.New("items failed")
	// ErrNotRecorded: the run's own metadata could not be written, so
	// lastCommit did not advance; the next run does the work again.
	ErrNotRecorded = errors.New("run not recorded")
)

func (o Options) withDefaults() Options {
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = policy.DefaultMaxFileSize
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 50
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.ReconcileInterval <= 0 {
		o.ReconcileInterval = 7 * 24 * time.Hour
	}
	if o.Trigger == "" {
		o.Trigger = "cli"
	}
	return o
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

func newRunID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// run is the state of one run in progress.
type run struct {
	*Syncer
	opt   Options
	log   *slog.Logger
	start time.Time
	sum   policy.RunSummary
	prev  *policy.RunSummary
	// request counters at the start, so a reused adapter reports this run only
	baseGitHub int64
	baseUsage  registry.Usage
	// pending are the failed writes of earlier runs that this run retries;
	// dead are the dead letters, whose versions are held back.
	pending map[string]policy.QueueEntry
	dead    map[string]policy.DeadLetter
	// requeue are queue entries rewritten clean for names whose failed
	// version the head has since left behind.
	requeue []policy.QueueEntry
	// dropQueue are failed queue entries the head no longer needs written.
	dropQueue []string
	// recordErr is set when failed items could not be recorded for retry.
	recordErr error
	// carry maps a policyName to the v1 entry whose legacy fields it takes.
	carry map[string]policy.Entry
	// leased is set once this run holds the single-writer lease;
	// leaseRefused when another run held it.
	leased, leaseRefused bool
	// phases times the parts of the run, in milliseconds.
	phases    map[string]int64
	phase     string
	phaseFrom time.Time
}

// Run performs one sync. The returned error is nil for a success (including
// "nothing to do"), wraps ErrItemsFailed when items failed, and otherwise says
// why the run aborted; in every case but a dry run the run is recorded.
func (s *Syncer) Run(ctx context.Context, opt Options) (Result, error) {
	opt = opt.withDefaults()
	id := s.NewRunID
	if id == nil {
		id = newRunID
	}
	r := &run{Syncer: s, opt: opt, start: s.now(),
		baseGitHub: s.Source.Requests(), baseUsage: s.Registry.Usage()}
	r.sum = policy.RunSummary{
		RunID:     id(),
		Trigger:   opt.Trigger,
		DryRun:    opt.DryRun,
		Skipped:   []policy.Skip{},
		Conflicts: []policy.Conflict{},
	}
	r.log = s.logger().With(KeyRunID, r.sum.RunID, KeyTrigger, opt.Trigger, KeyRepo, s.Repo, KeyBranch, s.Branch)
	r.phases = map[string]int64{}
	r.enter("read")
	res, err := r.execute(ctx)
	res.Summary = r.finish(ctx, err)
	if err == nil && len(res.Summary.Failures) == 0 && res.Summary.Status == policy.RunFailed {
		// everything landed but the run could not be recorded
		err = fmt.Errorf("%w: %s", ErrNotRecorded, res.Summary.Error)
	}
	if len(res.Summary.Failures) > 0 && err == nil {
		names := make([]string, len(res.Summary.Failures))
		for i, f := range res.Summary.Failures {
			names[i] = f.PolicyName
		}
		outcome := ErrPartial
		if res.Summary.Status == policy.RunFailed {
			outcome = ErrItemsFailed
		}
		err = fmt.Errorf("%w: %d: %s", outcome, len(names), strings.Join(names, ", "))
	}
	return res, err
}

func (r *run) execute(ctx context.Context) (Result, error) {
	head, err := r.Source.Head(ctx)
	if err != nil {
		return Result{}, err
	}
	r.sum.CommitSHA = head
	last, err := r.Registry.LastCommit(ctx)
	if err != nil {
		return Result{}, err
	}
	r.sum.PreviousCommitSHA = last
	if r.prev, err = r.Registry.LastRun(ctx); err != nil {
		r.log.Warn("last run unreadable", KeyError, err)
		r.prev = nil
	}
	if r.prev != nil {
		// Until this run plans, what is known to be skipped or in conflict is
		// what the last run knew: an aborted or unchanged run reports it too.
		r.sum.LastFullRun = r.prev.LastFullRun
		r.sum.Skipped = append(r.sum.Skipped, r.prev.Skipped...)
		r.sum.Conflicts = append(r.sum.Conflicts, r.prev.Conflicts...)
	}
	if r.pending, err = r.pendingRetries(ctx); err != nil {
		return Result{}, err
	}

	mode, reason := r.chooseMode(last, head)
	if mode == ModeUnchanged {
		r.sum.Mode = ModeUnchanged
		r.log.Info("head unchanged", KeyCommit, head)
		return Result{}, nil
	}

	r.enter("plan")
	// The state read, the plan and the writes all happen under the lease, so
	// a run never writes a plan made before another run's writes.
	if !r.opt.DryRun {
		if err := r.acquireLease(ctx); err != nil {
			return Result{}, err
		}
	}
	entries, problems, err := r.Registry.Policies(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("registry: read policies: %w", err)
	}
	for key, perr := range problems {
		r.log.Warn("registry entry unreadable", KeyKey, key, KeyError, perr)
	}
	entries, v1 := splitV1(entries)
	known := make(map[string]policy.Known, len(entries))
	for name, e := range entries {
		known[name] = policy.Known{PolicyName: name, SHA: e.SHA, Path: e.Path}
	}
	var bad *registry.DecodeError
	if r.dead, err = r.Registry.DeadLetters(ctx); errors.As(err, &bad) {
		// an unreadable dead letter holds nothing back; a person can drop it
		r.log.Warn("dead letters unreadable", KeyError, err)
	} else if err != nil {
		return Result{}, fmt.Errorf("registry: read dead letters: %w", err)
	}

	plan, desired, err := r.plan(ctx, mode, reason, last, head, known)
	if err != nil {
		return Result{}, err
	}
	mode = r.sum.Mode // an untrusted compare made the run full
	plan = r.settleQueue(plan, desired, entries)
	if err := r.guard(plan, entries); err != nil {
		r.countPlan(plan)
		return Result{Plan: plan}, err
	}
	planned := make(map[string]policy.Item, len(plan.Items))
	for _, it := range plan.Items {
		planned[it.PolicyName] = it
	}
	r.enter("fetch")
	plan, failures, err := r.readTitles(ctx, head, plan, entries)
	if err != nil {
		return Result{Plan: plan}, err
	}
	plan = r.migrate(plan, entries, v1, mode == ModeFull)
	for _, c := range plan.Conflicts {
		r.log.Warn("duplicate policy name", KeyPolicy, c.PolicyName, KeyWinner, c.Winner, KeyLosers, c.Losers)
	}
	for _, sk := range plan.Skipped {
		r.log.Warn("file skipped", KeyPolicy, sk.PolicyName, KeyPath, sk.Path, KeyReason, sk.Reason)
	}
	r.countPlan(plan)
	if r.opt.DryRun {
		r.sum.Failures = failures
		return Result{Plan: plan}, nil
	}
	if err := r.checkBudget(ctx, plan); err != nil {
		return Result{Plan: plan}, err
	}
	r.enter("apply")
	failures = append(failures, r.apply(ctx, plan, entries)...)
	slices.SortFunc(failures, func(a, b policy.Failure) int { return strings.Compare(a.PolicyName, b.PolicyName) })
	r.sum.Failures = failures
	r.countPlan(withoutFailed(plan, failures))
	if len(failures) > 0 {
		r.recordErr = r.recordFailures(ctx, planned, failures)
	}
	if mode == ModeFull && len(failures) == 0 {
		r.sum.LastFullRun = r.start.Format(time.RFC3339)
	}
	return Result{Plan: plan}, ctx.Err()
}

// enter ends the current phase of the run and starts the next ("" ends it).
func (r *run) enter(phase string) {
	now := r.now()
	if r.phase != "" {
		r.phases[r.phase] += now.Sub(r.phaseFrom).Milliseconds()
	}
	r.phase, r.phaseFrom = phase, now
}

// readTitles reads the content of every add and update, fills in titles,
// turns empty and oversized content into skips and unreadable files into
// failures (never deletes).
func (r *run) readTitles(ctx context.Context, head string, plan policy.Plan, entries map[string]policy.Entry) (policy.Plan, []policy.Failure, error) {
	var files []policy.File
	for _, it := range plan.Items {
		if it.Action == policy.ActAdd || it.Action == policy.ActUpdate {
			files = append(files, policy.File{Path: it.Path, SHA: it.SHA, Size: -1})
		}
	}
	var (
		contents map[string][]byte
		fetchErr map[string]error
	)
	if len(files) > 0 {
		var err error
		r.log.Info("reading contents", KeyFiles, len(files))
		contents, fetchErr, err = r.Source.Contents(ctx, head, files)
		if err != nil {
			return plan, nil, err
		}
	}
	var failures []policy.Failure
	items := plan.Items[:0:0]
	for _, it := range plan.Items {
		switch it.Action {
		case policy.ActMove:
			it.Title = entries[it.PolicyName].Title
		case policy.ActAdd, policy.ActUpdate:
			body, ok := contents[it.Path]
			if !ok {
				ferr := fetchErr[it.Path]
				if ferr == nil {
					ferr = errors.New("content not returned")
				}
				failures = append(failures, policy.Failure{PolicyName: it.PolicyName, Error: "read content: " + ferr.Error()})
				r.log.Warn("content unreadable", KeyPolicy, it.PolicyName, KeyPath, it.Path, KeyError, ferr)
				continue
			}
			if reason := (differ.Options{MaxFileSize: r.opt.MaxFileSize}).SkipReason(it.PolicyName, int64(len(body))); reason != "" {
				plan.Skipped = append(plan.Skipped, policy.Skip{PolicyName: it.PolicyName, Path: it.Path, Reason: reason})
				continue
			}
			it.Title = policy.Title(body, it.PolicyName)
		}
		items = append(items, it)
	}
	plan.Items = items
	return plan, failures, nil
}

func (r *run) countPlan(p policy.Plan) {
	r.sum.Added = p.Count(policy.ActAdd)
	r.sum.Updated = p.Count(policy.ActUpdate)
	r.sum.Moved = p.Count(policy.ActMove)
	r.sum.Deleted = p.Count(policy.ActDelete)
	r.sum.Migrated = p.Count(policy.ActMigrate)
	r.sum.Unchanged = p.Unchanged
	r.sum.TotalProcessed = len(p.Items) + p.Unchanged
	r.sum.Skipped = append([]policy.Skip{}, p.Skipped...)
	r.sum.Conflicts = append([]policy.Conflict{}, p.Conflicts...)
}

func withoutFailed(p policy.Plan, failures []policy.Failure) policy.Plan {
	failed := make(map[string]bool, len(failures))
	for _, f := range failures {
		failed[f.PolicyName] = true
	}
	p.Items = slices.DeleteFunc(slices.Clone(p.Items), func(it policy.Item) bool { return failed[it.PolicyName] })
	return p
}
