package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/knue/syncjob/internal/config"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/report"
	"github.com/knue/syncjob/internal/wire"
)

// runsCommand is "syncjob runs": the run history, one line a run; "syncjob
// runs show RUN" prints one run with its changes.
type runsCommand struct{ p *program }

var runsHelp = help{
	name:  "runs",
	usage: "runs [--json] [--limit N] [settings]\n       syncjob runs show RUN [--json] [settings]",
	about: `Prints the recent runs of the run history (kept 90 days), newest first, one
line each: when, status, mode, trigger, counts, commit and the run id.
"runs show RUN" prints one run (its id from the list): its summary and the
policies it added, updated, moved and deleted, with their paths and shas (the
first 100; the rest are counted). Reads the registry only: it works while a
sync runs.`,
	groups: config.Registry | config.Logging,
}

var runsShowHelp = help{
	name:   "runs show",
	usage:  "runs show RUN [--json] [settings]",
	about:  "Prints one run of the run history (RUN: its id, from syncjob runs) and the policies it added, updated, moved and deleted (the first 100; the rest are counted).",
	groups: config.Registry | config.Logging,
	args:   1,
}

func (c *runsCommand) Run(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "show" {
		return c.show(ctx, args[1:])
	}
	fs := c.p.flagSet("runs")
	asJSON := config.BoolVar(fs, "json", "print JSON")
	limit := fs.Int("limit", 20, "how many runs to show, newest first (0: all)")
	cfg, _, err := c.p.parse(fs, runsHelp, args)
	if err == nil && *limit < 0 {
		err = usageError("runs", fmt.Sprintf("-limit: %d is negative; give how many runs to show (0: all)", *limit))
	}
	if err != nil {
		return err
	}
	_, reg, closeReg, err := c.p.open(cfg, wire.ReadAccess)
	if err != nil {
		return err
	}
	defer closeReg()
	runs, err := reg.Runs(ctx, *limit)
	if err != nil && runs == nil {
		return cfg.Redact(fmt.Errorf("runs: %w", err))
	}
	if runs == nil {
		runs = []policy.RunSummary{}
	}
	if *asJSON {
		report.PrintJSON(c.p.stdout, runs)
	} else {
		report.RunList(c.p.stdout, runs)
	}
	if err != nil {
		fmt.Fprintf(c.p.stderr, "syncjob: runs: %v\n", cfg.Redact(err))
	}
	return nil
}

func (c *runsCommand) show(ctx context.Context, args []string) error {
	fs := c.p.flagSet("runs show")
	asJSON := config.BoolVar(fs, "json", "print JSON")
	cfg, id, err := c.p.parseName(fs, runsShowHelp, args)
	if err != nil {
		return err
	}
	if id == "" {
		return usageError("runs show", "needs the id of a run (syncjob runs)")
	}
	_, reg, closeReg, err := c.p.open(cfg, wire.ReadAccess)
	if err != nil {
		return err
	}
	defer closeReg()
	run, err := reg.RunByID(ctx, id)
	if errors.Is(err, policy.ErrNotFound) {
		return &exitError{code: exitFailed, err: fmt.Errorf("runs show: no run %s in the run history (it keeps 90 days; syncjob runs lists them)", report.Printable(id))}
	}
	if err != nil {
		return cfg.Redact(fmt.Errorf("runs show: %w", err))
	}
	if *asJSON {
		report.PrintJSON(c.p.stdout, run)
		return nil
	}
	report.RunDetail(c.p.stdout, run)
	return nil
}
