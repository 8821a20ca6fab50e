package main

import (
	"context"
	"fmt"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/syncer"
)

// syncCommand is "syncjob sync": one run that brings the registry up to
// date with the branch head, or on --dry-run prints what it would do.
type syncCommand struct{ p *program }

var syncHelp = help{
	name:  "sync",
	usage: "sync [--full] [--dry-run] [--json] [--quiet] [--allow-mass-delete] [settings]",
	about: `Reads the branch head and brings the registry up to date. Prints what the run did
first ("synced", "partial", or "refused:" / "failed:" when it wrote nothing or
failed), then one line per change: + add, ~ change, → move, - delete, ! failed,
held back or skipped; and a closing "Plan:" line. A plan that was not applied
says so.`,
	groups: groupSource | groupRegistry | groupRun | groupLogging,
}

func (c *syncCommand) Run(ctx context.Context, args []string) error {
	fs := c.p.flagSet("sync")
	full := boolVar(fs, "full", "compare the whole head tree with the registry, not only the changes since the last commit")
	allowMassDelete := boolVar(fs, "allow-mass-delete",
		"let through a plan that empties the registry or deletes more than 10 policies and 20% of it (env ALLOW_MASS_DELETE=true)")
	var envErr error
	*allowMassDelete, envErr = envBool(c.p.getenv, "ALLOW_MASS_DELETE")
	dryRun := boolVar(fs, "dry-run", "print the plan and write nothing (the registry file is not created either)")
	asJSON := boolVar(fs, "json", "print the outcome, the run summary and the plan as JSON")
	quiet := boolVar(fs, "quiet", "print the summary line alone, not the plan")
	cfg, _, err := c.p.parse(fs, syncHelp, args)
	if err == nil && envErr != nil && !isSet(fs, "allow-mass-delete") {
		err = envErr // the flag wins over a bad environment value
	}
	if err == nil {
		err = cfg.ValidateSource()
	}
	if err != nil {
		return err
	}
	a := syncAccess
	if *dryRun {
		a = planAccess
	}
	logger, reg, closeReg, err := c.p.open(cfg, a)
	if err != nil {
		return err
	}
	defer closeReg()

	var prog func(done, total int)
	if c.p.line != nil && !*asJSON {
		prog = c.p.line.progress()
	}
	s, err := newSyncer(cfg, c.p.deps, reg, logger, prog)
	if err != nil {
		return &exitError{exitUsage, cfg.redact(err)}
	}
	opt := syncer.Options{Full: *full, DryRun: *dryRun, Trigger: "cli", AllowMassDelete: *allowMassDelete}
	res, runErr := s.Run(ctx, cfg.syncOptions(opt))
	if c.p.line != nil {
		c.p.line.clear()
	}
	rep := newRunReport(res, cfg.redact(runErr), *dryRun, cfg.secrets())
	if *asJSON {
		printJSON(c.p.stdout, rep.json())
	} else {
		rep.write(c.p.stdout, *quiet, c.p.colours(c.p.stdout))
	}
	if runErr != nil {
		return fmt.Errorf("sync: %w", cfg.redact(runErr))
	}
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
