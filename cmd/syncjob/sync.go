package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/syncer"
)

// syncCommand is "syncjob sync": one run that brings the registry up to
// date with the branch head, or on --dry-run prints what it would do.
type syncCommand struct{ p *program }

var syncHelp = help{
	name:  "sync",
	usage: "sync [--full] [--dry-run [--detailed-exitcode]] [--json] [--quiet] [--allow-mass-delete[=N]] [--expect-head SHA] [settings]",
	about: `Reads the branch head and brings the registry up to date. Prints what the run did
first ("synced", "partial", or "refused:" / "failed:" when it wrote nothing or
failed), then one line per change: + add, ~ change, → move, - delete, ! failed,
held back or skipped; and a closing "Plan:" line. A plan that was not applied
says so.

To apply the plan a dry run showed and nothing else, pin it: --expect-head SHA
refuses (exit 4, nothing written) when the branch has moved since, and
--allow-mass-delete=N lets a mass delete through only when it deletes exactly
N policies. --dry-run --detailed-exitcode exits 5 when the plan has changes.`,
	groups: groupSource | groupRegistry | groupRun | groupLogging | groupMirror,
}

// syncFlags are the flags of "syncjob sync" besides the settings.
type syncFlags struct {
	full, dryRun, asJSON, quiet, detailed bool
	allow                                 massDeleteFlag
	expectHead                            string
}

// parseSync parses the arguments of "syncjob sync".
func (c *syncCommand) parseSync(args []string) (Config, syncFlags, error) {
	var f syncFlags
	fs := c.p.flagSet("sync")
	fs.Var(boolFlag{&f.full}, "full", "compare the whole head tree with the registry, not only the changes since the last commit")
	fs.Var(&f.allow, "allow-mass-delete", `let through a plan that empties the registry or loses more than MAX_DELETE
policies and MAX_DELETE_PERCENT of it: =N only the plan that deletes exactly N
policies (the one reviewed; any other is refused), alone (or env
ALLOW_MASS_DELETE=yes) any plan`)
	envAny, envErr := envBool(c.p.getenv, "ALLOW_MASS_DELETE")
	f.allow.any = envAny
	fs.Var(boolFlag{&f.dryRun}, "dry-run", "print the plan and write nothing (the registry file is not created either)")
	fs.Var(&stringFlag{p: &f.expectHead, kind: "sha"}, "expect-head", "refuse (exit 4, nothing written) unless the branch head is this commit: the one a reviewed plan was made at")
	fs.Var(boolFlag{&f.detailed}, "detailed-exitcode", fmt.Sprintf("with --dry-run: exit %d when the plan has changes, 0 when it has none", exitPending))
	fs.Var(boolFlag{&f.asJSON}, "json", "print the outcome, the run summary and the plan as JSON")
	fs.Var(boolFlag{&f.quiet}, "quiet", "print the summary line alone, not the plan")
	cfg, _, err := c.p.parse(fs, syncHelp, args)
	switch {
	case err != nil:
		return cfg, f, err
	case envErr != nil && !isSet(fs, "allow-mass-delete"):
		return cfg, f, envErr // the flag wins over a bad environment value
	case f.expectHead != "" && !shaPrefix.MatchString(f.expectHead):
		return cfg, f, usageError("sync", fmt.Sprintf("-expect-head: %q is not a commit sha (7 to 40 hex digits)", f.expectHead))
	case f.detailed && !f.dryRun:
		return cfg, f, usageError("sync", "-detailed-exitcode goes with --dry-run")
	}
	return cfg, f, cfg.ValidateSource()
}

var shaPrefix = regexp.MustCompile(`^[0-9a-fA-F]{7,40}$`)

func (c *syncCommand) Run(ctx context.Context, args []string) error {
	cfg, f, err := c.parseSync(args)
	if err != nil {
		return err
	}
	a := syncAccess
	if f.dryRun {
		a = planAccess
	}
	p := c.p
	if f.quiet { // the outcome line alone: no log lines, no progress
		q := *c.p
		q.stderr, q.line, q.errTerminal = io.Discard, nil, false
		p = &q
	}
	created := a == syncAccess && !cfg.cloudflare() && !fileExists(cfg.RegistryPath)
	logger, reg, closeReg, err := p.open(cfg, a)
	if err != nil {
		return err
	}
	closeReg = sync.OnceFunc(closeReg)
	defer closeReg()
	var prog func(done, total int)
	if p.line != nil && !f.asJSON {
		prog = p.line.progress()
	}
	s, err := newSyncer(cfg, p.deps, reg, logger, prog)
	if err != nil {
		return &exitError{exitUsage, cfg.redact(err)}
	}
	res, runErr := c.run(ctx, p, cfg, f, s)
	rep := newRunReport(res, cfg.redact(runErr), f.dryRun, cfg.secrets())
	if created && runErr != nil && !rep.applied {
		// The registry did not exist and the run wrote no policy: a file
		// that records only its failure would read as a synced registry.
		closeReg()
		_ = os.Remove(cfg.RegistryPath)
	}
	if f.asJSON {
		printJSON(c.p.stdout, rep.json())
	} else {
		rep.write(c.p.stdout, f.quiet, c.p.colours(c.p.stdout))
	}
	switch {
	case runErr != nil:
		// the report's first line (or its JSON) said it: once is enough
		return &exitError{code: exitCode(runErr)}
	case f.detailed && len(res.Plan.Items) > 0:
		return &exitError{code: exitPending} // the report showed the changes
	}
	return nil
}

// run runs s once with the options of f.
func (c *syncCommand) run(ctx context.Context, p *program, cfg Config, f syncFlags, s *syncer.Syncer) (syncer.Result, error) {
	opt := syncer.Options{Full: f.full, DryRun: f.dryRun, Trigger: "cli",
		AllowMassDelete: f.allow.any, AllowDeletes: f.allow.n, ExpectHead: f.expectHead}
	res, runErr := s.Run(ctx, cfg.syncOptions(opt))
	if p.line != nil {
		p.line.clear()
	}
	return res, tokenHint(leaseHint(runErr), cfg.GitHubToken)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// massDeleteFlag is --allow-mass-delete: alone (or yes/no) any plan, or =N
// a plan that deletes exactly N policies. A number is a count, 1 too: the
// flag pins a reviewed plan; ALLOW_MASS_DELETE is yes/no only.
type massDeleteFlag struct {
	any bool
	n   int
}

func (m *massDeleteFlag) IsBoolFlag() bool { return true }

func (m *massDeleteFlag) String() string {
	if m == nil || m.n == 0 {
		return ""
	}
	return strconv.Itoa(m.n)
}

func (m *massDeleteFlag) Set(v string) error {
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
		*m = massDeleteFlag{n: n}
		return nil
	}
	b, err := parseBool(v)
	if err != nil {
		return fmt.Errorf("%q is not a count of policies or a yes/no value", v)
	}
	*m = massDeleteFlag{any: b}
	return nil
}

// syncJSON is what "syncjob sync --json" prints. Applied tells whether the
// plan was written (at least in part); the summary's counts are the run's.
type syncJSON struct {
	Outcome string            `json:"outcome"` // synced, partial, dry run, refused, failed
	Applied bool              `json:"applied"`
	Error   string            `json:"error,omitempty"`
	Summary policy.RunSummary `json:"summary"`
	Plan    policy.Plan       `json:"plan"`
}

// leaseHint adds to a lease-held refusal the command that clears a lease
// whose run is gone.
func leaseHint(err error) error {
	var held *registry.LeaseHeldError
	if !errors.As(err, &held) {
		return err
	}
	return fmt.Errorf("%w; if that run is gone: syncjob lease release --id %s", err, shellQuote(held.Held.Owner))
}

// tokenHint adds to GitHub's rate limit, when no token is set, the
// setting that raises it.
func tokenHint(err error, token string) error {
	if token != "" || !errors.Is(err, policy.ErrRateLimited) {
		return err
	}
	return fmt.Errorf("%w; set GITHUB_TOKEN to raise GitHub's limit from 60 to 5,000 requests an hour", err)
}
