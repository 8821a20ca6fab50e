package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// statusCommand is "syncjob status": what the registry holds, what the job
// did last and what waits; --check turns it into a health check.
type statusCommand struct{ p *program }

var statusHelp = help{
	name:  "status",
	usage: "status [--json] [--check] [--runs N] [settings]",
	about: `Prints the repository and branch the last run synced, which registry this is
and its writer or lease, the last run, the last commit, the time since the last
success, the queue, the dead letters and the recent runs (--runs N). Reads the
registry only: it works while a sync runs. When GITHUB_REPO or GITHUB_BRANCH
name another repository or branch than the last run synced, a "settings" line
shows them beside it (they do not relabel the registry; the next sync reads
them).

--check is a health check: one line, and exit 0 when the last run succeeded,
the last success is younger than STATUS_MAX_AGE and no dead letter holds a
version back; else exit 1, saying why.`,
	groups: groupRegistry | groupLogging | groupHealth | groupLabel,
}

func (c *statusCommand) Run(ctx context.Context, args []string) error {
	fs := c.p.flagSet("status")
	asJSON := boolVar(fs, "json", "print JSON")
	check := boolVar(fs, "check", "print only whether the job is healthy, and exit 1 when it is not")
	runs := fs.Int("runs", 10, "how many recent runs to show")
	cfg, _, err := c.p.parse(fs, statusHelp, args)
	if err == nil && *runs < 0 {
		err = usageError("status", fmt.Sprintf("-runs: %d is negative; give how many recent runs to show (0 or more)", *runs))
	}
	if err != nil {
		return err
	}
	_, reg, closeReg, err := c.p.open(cfg, readAccess)
	if err != nil {
		return err
	}
	defer closeReg()
	rep, err := gatherStatus(ctx, reg, c.p.now(), *runs, *check && !*asJSON)
	if err != nil {
		return cfg.redact(fmt.Errorf("status: %w", err))
	}
	rep.describe(cfg)
	rep.Health = checkHealth(rep, c.p.now(), cfg.StatusMaxAge)
	switch {
	case *asJSON:
		printJSON(c.p.stdout, rep)
	case *check:
		fmt.Fprintln(c.p.stdout, rep.Health)
	default:
		printStatus(c.p.stdout, rep)
	}
	if *check && !rep.Health.Healthy {
		return &exitError{code: exitFailed} // the report said why
	}
	return nil
}

// statusReport is what "syncjob status --json" prints.
type statusReport struct {
	Repo             string               `json:"repo,omitempty"`
	Branch           string               `json:"branch,omitempty"`
	SettingsRepo     string               `json:"settingsRepo,omitempty"`   // GITHUB_REPO, when it or
	SettingsBranch   string               `json:"settingsBranch,omitempty"` // GITHUB_BRANCH differs from what the last run synced
	Registry         string               `json:"registry"`
	Writer           *registry.BoltWriter `json:"writer,omitempty"`
	Lease            *registry.Lease      `json:"lease"`
	LeaseExpired     bool                 `json:"leaseExpired,omitempty"`
	LastRun          *policy.RunSummary   `json:"lastRun"`
	LastCommit       string               `json:"lastCommit"`
	LastSuccess      string               `json:"lastSuccess,omitempty"`
	SinceLastSuccess string               `json:"sinceLastSuccess,omitempty"`
	Policies         int                  `json:"policies"`
	QueueDepth       int                  `json:"queueDepth"`
	WaitingRetry     int                  `json:"waitingRetry"`
	DeadLetters      []policy.DeadLetter  `json:"deadLetters"`
	// UnreadableDeadLetters are dead letters whose value does not decode.
	UnreadableDeadLetters []string            `json:"unreadableDeadLetters,omitempty"`
	Runs                  []policy.RunSummary `json:"runs"`
	Health                health              `json:"health"`

	lastSuccess time.Time
}

// gatherStatus reads the report from the registry; runs is how many recent
// runs it lists. Every read is a listing or a bulk read, never one request
// per entry (on Cloudflare: one bulk get for lastCommit, lastRun and the
// lease, a listing each for the queue, the dead letters, the policies and
// the run history, and a bulk get of the recent runs). checkOnly reads what
// the health check needs alone: the state, the dead letters and, when the
// last run does not record it, the history's last success.
func gatherStatus(ctx context.Context, reg *registry.Registry, now time.Time, runs int, checkOnly bool) (statusReport, error) {
	var rep statusReport
	if err := rep.gatherState(ctx, reg, now); err != nil {
		return rep, err
	}
	if err := rep.gatherDeadLetters(ctx, reg); err != nil {
		return rep, err
	}
	if checkOnly {
		return rep, rep.gatherLastSuccess(ctx, reg, now)
	}
	q, err := reg.Queue(ctx)
	if err != nil && q == nil {
		return rep, err
	}
	rep.QueueDepth = len(q)
	for _, e := range q {
		if e.ErrorMessage != nil {
			rep.WaitingRetry++
		}
	}
	if rep.Policies, err = reg.CountPolicies(ctx); err != nil {
		return rep, err
	}
	if err := rep.gatherLastSuccess(ctx, reg, now); err != nil {
		return rep, err
	}
	if rep.Runs, err = reg.Runs(ctx, runs); err != nil && rep.Runs == nil {
		return rep, err
	}
	return rep, nil
}

// gatherState reads lastCommit, lastRun and the lease in one request.
func (rep *statusReport) gatherState(ctx context.Context, reg *registry.Registry, now time.Time) error {
	st, err := reg.SyncState(ctx)
	if err != nil {
		return err
	}
	if st.LastRunErr != nil {
		return st.LastRunErr
	}
	if st.LeaseErr != nil {
		return st.LeaseErr
	}
	rep.LastRun, rep.LastCommit, rep.Lease = st.LastRun, st.LastCommit, st.Lease
	rep.LeaseExpired = rep.Lease != nil && rep.Lease.Expired(now)
	return nil
}

func (rep *statusReport) gatherDeadLetters(ctx context.Context, reg *registry.Registry) error {
	dead, err := reg.DeadLetters(ctx)
	if err != nil && dead == nil {
		return err
	}
	rep.DeadLetters = sortedValues(dead)
	var bad *registry.DecodeError
	if errors.As(err, &bad) {
		for _, key := range slices.Sorted(maps.Keys(bad.Problems)) {
			rep.UnreadableDeadLetters = append(rep.UnreadableDeadLetters, strings.TrimPrefix(key, registry.DeadLetterPrefix))
		}
	}
	return nil
}

// gatherLastSuccess finds the last success, which may be older than the
// recent runs shown: the last run records it (lastSuccess); for a last run
// recorded by an older version, the history's listing says, without reading
// every run.
func (rep *statusReport) gatherLastSuccess(ctx context.Context, reg *registry.Registry, now time.Time) error {
	if lr := rep.LastRun; lr != nil && !lr.DryRun {
		at := lr.LastSuccess
		if at == "" && lr.Status == policy.RunSuccess {
			at = lr.Timestamp
		}
		if t, err := time.Parse(policy.TimeLayout, at); err == nil {
			rep.lastSuccess = t
			rep.LastSuccess = t.Format(time.RFC3339)
			rep.SinceLastSuccess = now.Sub(t).Round(time.Minute).String()
			return nil
		}
	}
	index, err := reg.RunIndex(ctx)
	if err != nil {
		return err
	}
	for _, ref := range index {
		if ref.Status == policy.RunSuccess {
			rep.lastSuccess = ref.At
			rep.LastSuccess = ref.At.Format(time.RFC3339)
			rep.SinceLastSuccess = now.Sub(ref.At).Round(time.Minute).String()
			return nil
		}
	}
	return nil
}

// describe says which registry the report is of, who writes it, and which
// repository and branch it is synced from: what the last run recorded, or
// what the settings say when nothing was recorded. Settings that name
// another repository or branch than the last run synced are reported beside
// it (the next sync would read them).
func (rep *statusReport) describe(cfg Config) {
	rep.Repo, rep.Branch = cfg.Repo, cfg.Branch
	if lr := rep.LastRun; lr != nil && lr.Repo != "" {
		if cfg.Repo != "" && (!strings.EqualFold(cfg.Repo, lr.Repo) || cfg.Branch != lr.Branch) {
			rep.SettingsRepo, rep.SettingsBranch = cfg.Repo, cfg.Branch
		}
		rep.Repo, rep.Branch = lr.Repo, lr.Branch
	}
	if cfg.cloudflare() {
		rep.Registry = fmt.Sprintf("Cloudflare Workers KV, account %s, namespace %s", cfg.CFAccountID, cfg.CFNamespaceID)
		return
	}
	rep.Registry = "file " + cfg.RegistryPath
	rep.Writer, _ = registry.BoltHolder(cfg.RegistryPath) // who writes it is a courtesy: no error for it
}
