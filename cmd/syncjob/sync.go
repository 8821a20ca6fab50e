package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"sync"
	"time"

	"github.com/knue/syncjob/internal/config"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/report"
	"github.com/knue/syncjob/internal/syncer"
	"github.com/knue/syncjob/internal/wire"
)

// syncCommand is "syncjob sync": one run that brings the registry up to
// date with the branch head, or on --dry-run prints what it would do.
type syncCommand struct{ p *program }

var syncHelp = help{
	name:  "sync",
	usage: "sync [--full] [--dry-run [--detailed-exitcode]] [--json] [--quiet] [--allow-mass-delete[=N]] [--allow-rewind] [--expect-head SHA] [settings]",
	about: `Reads the branch head and brings the registry up to date. Prints what the run did
first ("synced", "partial", or "refused:" / "failed:" when it wrote nothing or
failed), then one line per change: + add, ~ change, → move, - delete, ! failed,
held back or skipped; and a closing "Plan:" line. A plan that was not applied
says so.

To apply the plan a dry run showed and nothing else, pin it: --expect-head SHA
refuses (exit 4, nothing written) when the branch has moved since, and
--allow-mass-delete=N lets a mass delete through only when it deletes exactly
N policies. --dry-run --detailed-exitcode exits 5 when the plan has changes.

A branch head behind the synced commit, or a repository or branch other than
the one the registry was synced from, is refused (exit 4, nothing written):
--allow-rewind (or ALLOW_REWIND=yes) syncs it anyway. A force-pushed head is
not refused: it is a full run.`,
	groups: config.Source | config.Registry | config.Run | config.Logging | config.Mirror,
}

// syncFlags are the flags of "syncjob sync" besides the settings.
type syncFlags struct {
	full, dryRun, asJSON, quiet, detailed bool
	allowRewind                           bool
	allow                                 config.MassDeleteFlag
	expectHead                            string
}

// parseSync parses the arguments of "syncjob sync".
func (c *syncCommand) parseSync(args []string) (config.Config, syncFlags, error) {
	var f syncFlags
	fs := c.p.flagSet("sync")
	fs.Var(config.BoolFlag{P: &f.full}, "full", "compare the whole head tree with the registry, not only the changes since the last commit")
	fs.Var(&f.allow, "allow-mass-delete", `let through a plan that empties the registry or loses more than MAX_DELETE
policies and MAX_DELETE_PERCENT of it: =N only the plan that deletes exactly N
policies (the one reviewed; any other is refused), alone (or env
ALLOW_MASS_DELETE=yes) any plan`)
	envAny, envErr := config.EnvBool(c.p.getenv, "ALLOW_MASS_DELETE")
	f.allow.Any = envAny
	rewindEnv, rewindErr := config.EnvBool(c.p.getenv, "ALLOW_REWIND")
	f.allowRewind = rewindEnv
	fs.Var(config.BoolFlag{P: &f.allowRewind}, "allow-rewind", `sync a branch head behind the synced commit, or another repository or branch
than the registry was synced from (env ALLOW_REWIND=yes); refused otherwise`)
	fs.Var(config.BoolFlag{P: &f.dryRun}, "dry-run", "print the plan and write nothing (the registry file is not created either)")
	fs.Var(&config.StringFlag{P: &f.expectHead, Kind: "sha"}, "expect-head", "refuse (exit 4, nothing written) unless the branch head is this commit: the one a reviewed plan was made at")
	fs.Var(config.BoolFlag{P: &f.detailed}, "detailed-exitcode", fmt.Sprintf("with --dry-run: exit %d when the plan has changes, 0 when it has none", exitPending))
	fs.Var(config.BoolFlag{P: &f.asJSON}, "json", "print the outcome, the run summary and the plan as JSON")
	fs.Var(config.BoolFlag{P: &f.quiet}, "quiet", "print the summary line alone, not the plan")
	cfg, _, err := c.p.parse(fs, syncHelp, args)
	switch {
	case err != nil:
		return cfg, f, err
	case envErr != nil && !config.IsSet(fs, "allow-mass-delete"):
		return cfg, f, envErr // the flag wins over a bad environment value
	case rewindErr != nil && !config.IsSet(fs, "allow-rewind"):
		return cfg, f, rewindErr
	case f.expectHead != "" && !shaPrefix().MatchString(f.expectHead):
		return cfg, f, usageError("sync", fmt.Sprintf("-expect-head: %q is not a commit sha (7 to 40 hex digits)", f.expectHead))
	case f.detailed && !f.dryRun:
		return cfg, f, usageError("sync", "-detailed-exitcode goes with --dry-run")
	}
	return cfg, f, cfg.ValidateSource()
}

// shaPrefix is compiled when first used, not when the program starts
// (docs/bench.md, "Round trips").
var shaPrefix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-fA-F]{7,40}$`) })

func (c *syncCommand) Run(ctx context.Context, args []string) error {
	cfg, f, err := c.parseSync(args)
	if err != nil {
		return err
	}
	a := wire.SyncAccess
	if f.dryRun {
		a = wire.PlanAccess
	}
	p := c.program(cfg, f)
	created := a == wire.SyncAccess && !cfg.Cloudflare() && !fileExists(cfg.RegistryPath)
	logger, reg, closeReg, err := p.open(cfg, a)
	if err != nil {
		return err
	}
	closeReg = sync.OnceFunc(closeReg)
	defer closeReg()
	var prog syncer.Progress // an interface: a nil *report.Progress is none
	if p.progress != nil {
		prog = p.progress
	}
	s, err := wire.NewSyncer(cfg, p.deps.hooks(), reg, logger, prog)
	if err != nil {
		return &exitError{exitUsage, cfg.Redact(err)}
	}
	res, runErr := c.run(ctx, p, cfg, f, s)
	rep := report.NewRun(res, cfg.Redact(runErr), f.dryRun, cfg.Secrets())
	if created && runErr != nil && !rep.Applied() {
		// The registry did not exist and the run wrote no policy: a file
		// that records only its failure would read as a synced registry.
		closeReg()
		_ = os.Remove(cfg.RegistryPath)
	}
	if f.asJSON {
		report.PrintJSON(c.p.stdout, rep.JSON())
	} else {
		rep.Write(c.p.stdout, f.quiet, c.p.colours(c.p.stdout))
	}
	if f.dryRun && errors.Is(runErr, syncer.ErrPartial) && len(res.Summary.Failures) == 0 {
		// it recorded nothing, and what dead letters hold back is no failure of its
		// own: its plan says the rest (5 or 0); an unread file leaves it unknown (3)
		runErr = nil
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
func (c *syncCommand) run(ctx context.Context, p *program, cfg config.Config, f syncFlags, s *syncer.Syncer) (syncer.Result, error) {
	opt := syncer.Options{Full: f.full, DryRun: f.dryRun, Trigger: "cli",
		AllowMassDelete: f.allow.Any, AllowDeletes: f.allow.N, ExpectHead: f.expectHead, AllowRewind: f.allowRewind}
	stop := tick(p.progress)
	res, runErr := s.Run(ctx, cfg.SyncOptions(opt))
	stop()
	if p.line != nil {
		p.line.Clear()
	}
	return res, tokenHint(leaseHint(runErr), cfg.GitHubToken)
}

// program is what this sync prints through: on --quiet the outcome line
// alone (no log lines, no progress); on a terminal whose logs are text, a
// progress line (never among JSON logs, nor beside --json output).
func (c *syncCommand) program(cfg config.Config, f syncFlags) *program {
	q := *c.p
	switch {
	case f.quiet:
		q.stderr, q.line, q.errTerminal = io.Discard, nil, false
	case q.line != nil && !f.asJSON && cfg.LogFormat != "json":
		q.progress = report.NewProgress(q.line, q.now)
	}
	return &q
}

// tickEvery is how often the progress line is redrawn while no count
// moves: a wait counts down.
const tickEvery = time.Second

// tick redraws progress every tickEvery until the function it returns is
// called; nil progress: nothing to redraw.
func tick(progress *report.Progress) (stop func()) {
	if progress == nil {
		return func() {}
	}
	t := time.NewTicker(tickEvery)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-t.C:
				progress.Tick()
			case <-done:
				return
			}
		}
	}()
	return func() { t.Stop(); close(done); wg.Wait() }
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// leaseHint adds to a lease-held refusal the command that clears a lease
// whose run is gone.
func leaseHint(err error) error {
	var held *registry.LeaseHeldError
	if !errors.As(err, &held) {
		return err
	}
	return fmt.Errorf("%w; if that run is gone: syncjob lease release --id %s", err, report.ShellQuote(held.Held.Owner))
}

// tokenHint adds to GitHub's rate limit, when no token is set, the
// setting that raises it (not to Cloudflare's: no GitHub token raises it).
func tokenHint(err error, token string) error {
	if rl := (*policy.RateLimitError)(nil); token != "" || !errors.As(err, &rl) || rl.API != "github" {
		return err
	}
	return fmt.Errorf("%w; set GITHUB_TOKEN to raise GitHub's limit from 60 to 5,000 requests an hour", err)
}
