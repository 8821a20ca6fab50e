package syncer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// Source is what the repository holds (internal/github implements it).
type Source interface {
	// Head returns the branch head commit in one request. Errors wrap
	// policy.ErrConfig (unknown repository or branch) or policy.ErrRateLimited.
	Head(ctx context.Context) (string, error)
	// Tree returns every regular file of the commit, complete even when
	// GitHub truncates, sorted by path bytes.
	Tree(ctx context.Context, commit string) ([]policy.File, error)
	// Compare returns base...head; errors wrap policy.ErrCompareUntrusted when a
	// full run is needed instead.
	Compare(ctx context.Context, base, head string) (policy.Changeset, error)
	// CommitPaths returns every path the commit changes (both paths of a
	// rename); errors wrap policy.ErrCompareUntrusted when GitHub may have
	// cut the list.
	CommitPaths(ctx context.Context, sha string) ([]string, error)
	// Relation says how head stands to base: "identical", "ahead" (head
	// contains base), "behind", "diverged", or "unknown" (GitHub does not
	// know one of them).
	Relation(ctx context.Context, base, head string) (string, error)
	// Titles reads what a run keeps of each file at commit, by path (its
	// size and title, reading no more than maxSize+1 bytes of one), the
	// per-path failures, and an error only when the whole read must abort
	// (rate limit, configuration, the context).
	Titles(ctx context.Context, commit string, files []policy.File, maxSize int64) (map[string]policy.Content, map[string]error, error)
	// Requests is the number of HTTP requests made so far.
	Requests() int64
}

// DefaultLeaseTTL is the lease's TTL when Options leave it 0: a crashed
// run keeps others out for at most this long. It outlasts Cloudflare's rate
// window (a renewal can wait up to ~5 minutes behind a first sync's bulk
// writes when the window is full), and KV's ~60 s of eventual consistency
// stays inside the margin of the renewals, a third of it apart.
const DefaultLeaseTTL = 6 * time.Minute

// DefaultConcurrency is how many write batches are in flight at once: 16
// brings a first sync of 10,000 policies within 1.3× of a client that
// makes only the unavoidable requests, at 50 ms a request (docs/bench.md);
// Cloudflare's window, not this, bounds what a run sends in 5 minutes.
const DefaultConcurrency = 16

// Triggers of a run: what started it.
const (
	TriggerCLI      = "cli"
	TriggerSchedule = "schedule"
	TriggerManual   = "manual"
	TriggerWebhook  = "webhook"
)

// Options of one run.
type Options struct {
	Full     bool
	DryRun   bool
	Trigger  string // "cli", "schedule", "manual", "webhook"
	Delivery string // the GitHub delivery id of a webhook run
	// Forced says the push a webhook run was started for was forced: a run
	// of the consistency window may have synced a head the branch no longer
	// holds, which no commit of the range names, so on an eventually
	// consistent registry the run waits out the window before trusting
	// what it reads (docs/design.md, "Stale reads").
	Forced bool
	// Before is the commit the branch held before a forced push (the push
	// event's "before"): a head GitHub still reports at it, or behind it,
	// is its view from before the push; a head on another line is a later
	// push, synced as it is. Empty: any head on another line is waited for.
	Before string
	// After is the pushed commit a webhook run was started for. While the
	// branch head GitHub reports is still the last synced commit and does
	// not contain it, the run reads it again, 1, 2, 4 and 8 s later, and
	// fails if it never moves (ErrPushNotSeen).
	After             string
	MaxFileSize       int64         // 0 → policy.DefaultMaxFileSize
	BatchSize         int           // registry pairs per batch; 0 → 50
	Concurrency       int           // batches in flight; 0 → DefaultConcurrency
	ReconcileInterval time.Duration // full run when the last one is older; 0 → 24 hours
	AllowMassDelete   bool          // let a plan through the mass-delete guard
	// AllowDeletes, when positive, lets through the guard only a plan that
	// deletes exactly this many policies (the plan an operator reviewed),
	// and refuses any other; it overrides AllowMassDelete.
	AllowDeletes int
	DeleteLimit  *differ.Limit // the guard's thresholds; nil → differ.DefaultLimit
	// ExpectHead, when set, refuses the run before it writes anything
	// unless the branch head is this commit (a full sha or a prefix).
	ExpectHead       string
	DailyWriteBudget int64 // billable writes a UTC day may spend; 0 = no budget
	// LeaseTTL is how long the single-writer lease holds between renewals
	// (a third of it apart); 0 → DefaultLeaseTTL. The lease is also what
	// tells the next run that this one did not finish, so every run that
	// writes takes it; a negative TTL takes none (tests of other things).
	LeaseTTL   time.Duration
	LeaseOwner string // who holds it: the run id by default; a Lambda request id survives Lambda's retries
	// ConsistencyWindow is how long a read of an eventually consistent
	// registry may lag a write (stale.go): a run that cannot tell which
	// names the runs of that window wrote waits it out; 0 →
	// DefaultConsistencyWindow. Strongly consistent registries never wait.
	ConsistencyWindow time.Duration
	// AllowRewind lets through a head behind the synced commit and a
	// repository or branch other than the one the registry was synced
	// from (rewind.go); without it such a run is refused.
	AllowRewind bool
	// StopBefore is how long before the context's deadline the run stops
	// sending writes (deadline.go); 0 → DefaultStopBefore, or a tenth of
	// MaxDuration when that is shorter.
	StopBefore time.Duration
	// MaxDuration, when positive, is the run's own deadline from its
	// start, handled as a Lambda invocation's (deadline.go): the CLI's
	// MAX_DURATION. The context's deadline still holds when it is earlier.
	MaxDuration time.Duration
	// FirstSyncWindow is how many policies a first sync into an empty
	// registry plans and applies at once (windows.go); 0 →
	// DefaultFirstSyncWindow.
	FirstSyncWindow int
}

func (o Options) withDefaults() Options {
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = policy.DefaultMaxFileSize
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 50
	}
	if o.FirstSyncWindow <= 0 {
		o.FirstSyncWindow = DefaultFirstSyncWindow
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.ReconcileInterval <= 0 {
		o.ReconcileInterval = 24 * time.Hour
	}
	if o.Trigger == "" {
		o.Trigger = TriggerCLI
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.ConsistencyWindow <= 0 {
		o.ConsistencyWindow = DefaultConsistencyWindow
	}
	if o.StopBefore <= 0 {
		o.StopBefore = DefaultStopBefore
		if o.MaxDuration > 0 {
			o.StopBefore = min(DefaultStopBefore, o.MaxDuration/10)
		}
	}
	return o
}

func (o Options) deleteLimit() differ.Limit {
	if o.DeleteLimit == nil {
		return differ.DefaultLimit
	}
	return *o.DeleteLimit
}

// allowDeletes is what the guard lets through (see differ.GuardWithin).
func (o Options) allowDeletes() int {
	switch {
	case o.AllowDeletes > 0:
		return o.AllowDeletes
	case o.AllowMassDelete:
		return differ.AllowAny
	}
	return 0
}

func (o Options) differ() differ.Options { return differ.Options{MaxFileSize: o.MaxFileSize} }

// Syncer holds the adapters of a run. It carries no state between runs.
type Syncer struct {
	Source   Source
	Registry *registry.Registry
	Repo     string // owner/name, for logs and the summary
	Branch   string
	Logger   *slog.Logger
	Now      func() time.Time
	NewRunID func() string
	// Sleep is every wait of a run (between reads of a head that is not
	// yet a webhook's pushed commit, out the consistency window, between
	// tries of a lease release); nil → a timer (tests pass one that
	// returns at once).
	Sleep func(ctx context.Context, d time.Duration) error
	// Mirror, when set, is the content mirror the run keeps beside the
	// registry (mirror.go); MirrorPrefix is its key prefix
	// (mirror.DefaultPrefix when empty). The Source must then also be a
	// ContentSource.
	Mirror       mirror.Target
	MirrorPrefix string
	// Progress, when set, hears the run's phases and counts (progress.go).
	Progress Progress
}

// Result is what a run did (or, on a dry run, would do).
type Result struct {
	Summary policy.RunSummary
	Plan    policy.Plan
}

// Outcomes of a run that completed but not whole: ErrPartial when every
// failure is recorded for retry, or versions are held back, changes wait,
// or its reads went unverified (its message says which; lastCommit advances
// only past failures and held-back versions); ErrItemsFailed when failures
// could not be recorded (lastCommit stays, the next run sees the changes
// again).
var (
	ErrPartial     = errors.New("partial")
	ErrItemsFailed = errors.New("items failed")
	// ErrNotRecorded: the run's own metadata could not be written, so
	// lastCommit did not advance; the next run does the work again.
	ErrNotRecorded = errors.New("run not recorded")
	// ErrOutage: every read or every write of the run failed. That is an
	// outage (GitHub or the registry down), not item failures: the run
	// fails, lastCommit stays and no retry count moves.
	ErrOutage = errors.New("outage")
)

// expectHead refuses a run whose branch head is not the commit the
// operator reviewed a plan at.
func expectHead(want, head string) error {
	if want == "" || strings.HasPrefix(head, strings.ToLower(want)) {
		return nil
	}
	return fmt.Errorf("%w: the branch head is %s, not %s: the plan reviewed there is not the plan now", ErrHeadMoved, head, want)
}

// ErrHeadMoved refuses a run whose head is not Options.ExpectHead.
var ErrHeadMoved = differ.RefusedBy("expected head")

// stopped is err, or the cause of ctx's end when it ended (a lost lease).
// A lost lease is the cause of any error once it is lost, whatever the
// step says: its writes then all fail on the cancelled context, which the
// apply step reports as an outage (review), and the record must know the
// lease is not its own to release.
func stopped(ctx context.Context, err error) error {
	cause := context.Cause(ctx)
	if cause == nil || ctx.Err() == nil || err == nil || errors.Is(err, cause) {
		return err
	}
	if errors.Is(err, ctx.Err()) || errors.Is(cause, ErrLeaseLost) {
		return fmt.Errorf("%w: %w", cause, err)
	}
	return err
}

// runError is the error Run returns for a recorded summary.
func runError(sum policy.RunSummary, err error) error {
	if err != nil {
		return err
	}
	unverified := "" // said beside whatever else made the run partial
	if sum.Unverified != "" {
		unverified = "; " + sum.Unverified
	}
	if len(sum.Failures) == 0 {
		switch {
		case sum.Status == policy.RunFailed:
			// everything landed but the run could not be recorded
			return fmt.Errorf("%w: %s", ErrNotRecorded, sum.Error)
		case sum.Waiting > 0 && sum.StoppedEarly:
			return fmt.Errorf("%w: %d changes wait: the run stopped before its deadline; the next run continues%s%s", ErrPartial, sum.Waiting, sum.WaitingShown(), unverified)
		case sum.Waiting > 0:
			return fmt.Errorf("%w: %d changes wait for tomorrow's write budget (DAILY_WRITE_BUDGET); the next run continues%s%s", ErrPartial, sum.Waiting, sum.WaitingShown(), unverified)
		case len(sum.HeldBack) > 0:
			names := make([]string, len(sum.HeldBack))
			for i, h := range sum.HeldBack {
				names[i] = h.PolicyName
			}
			return fmt.Errorf("%w: %d held back by dead letters (syncjob deadletter retry --all): %s%s", ErrPartial, len(names), strings.Join(names, ", "), unverified)
		case sum.Unverified != "":
			return fmt.Errorf("%w: %s; the next run checks the whole registry", ErrPartial, sum.Unverified)
		}
		return nil
	}
	names := make([]string, len(sum.Failures))
	for i, f := range sum.Failures {
		names[i] = f.PolicyName
	}
	if sum.Status == policy.RunFailed {
		return fmt.Errorf("%w: %d: %s%s", ErrItemsFailed, len(names), strings.Join(names, ", "), unverified)
	}
	return fmt.Errorf("%w: failures recorded for retry: %d: %s%s", ErrPartial, len(names), strings.Join(names, ", "), unverified)
}

func newRunID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
