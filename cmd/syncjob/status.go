package main

import (
	"context"
	"fmt"

	"github.com/knue/syncjob/internal/config"
	"github.com/knue/syncjob/internal/report"
	"github.com/knue/syncjob/internal/wire"
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
version back, and the registry file (read whole) is readable; else exit 1,
saying why.`,
	groups: config.Registry | config.Logging | config.Health | config.Label,
}

func (c *statusCommand) Run(ctx context.Context, args []string) error {
	fs := c.p.flagSet("status")
	asJSON := config.BoolVar(fs, "json", "print JSON")
	check := config.BoolVar(fs, "check", "print only whether the job is healthy, and exit 1 when it is not")
	runs := fs.Int("runs", 10, "how many recent runs to show")
	cfg, _, err := c.p.parse(fs, statusHelp, args)
	if err == nil && *runs < 0 {
		err = usageError("status", fmt.Sprintf("-runs: %d is negative; give how many recent runs to show (0 or more)", *runs))
	}
	if err != nil {
		return err
	}
	_, reg, closeReg, err := c.p.open(cfg, wire.ReadAccess)
	if err != nil {
		return err
	}
	defer closeReg()
	// the check reads little on Workers KV (requests cost), a file whole: one unreadable is unhealthy
	rep, err := report.ReadStatus(ctx, reg, c.p.now(), *runs, *check && !*asJSON && cfg.Cloudflare())
	if err != nil {
		return cfg.Redact(fmt.Errorf("status: %w", err))
	}
	rep.Describe(cfg)
	rep.Health = report.CheckHealth(rep, c.p.now(), cfg.StatusMaxAge)
	switch {
	case *asJSON:
		report.PrintJSON(c.p.stdout, rep)
	case *check:
		fmt.Fprintln(c.p.stdout, report.Printable(rep.Health.String())) // names and errors come from files and services
	default:
		report.PrintStatus(c.p.stdout, rep)
	}
	if *check && !rep.Health.Healthy {
		return &exitError{code: exitFailed} // the report said why
	}
	return nil
}
