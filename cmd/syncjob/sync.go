package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/redact"
	"github.com/knue/syncjob/internal/syncer"
)

// syncCommand is "syncjob sync": one run that brings the registry up to
// date with the branch head, or on --dry-run prints what it would do.
type syncCommand struct{ p *program }

func (c *syncCommand) Run(ctx context.Context, args []string) error {
	fs := c.p.flagSet("sync")
	full := fs.Bool("full", false, "compare the whole head tree with the registry, not only the changes since the last commit")
	allowMassDelete := fs.Bool("allow-mass-delete", c.p.getenv("ALLOW_MASS_DELETE") == "true",
		"let through a plan that empties the registry or deletes more than 10 policies and 20% of it (env ALLOW_MASS_DELETE=true)")
	dryRun := fs.Bool("dry-run", false, "print the plan and write nothing")
	asJSON := fs.Bool("json", false, "print the plan and the run summary as JSON")
	cfg, err := c.p.parse(fs, "sync", args)
	if err == nil {
		err = cfg.ValidateSource()
	}
	if err != nil {
		return err
	}
	logger, reg, closeReg, err := c.p.open(cfg)
	if err != nil {
		return err
	}
	defer closeReg()

	var prog func(done, total int)
	if c.p.isTerminal(c.p.stderr) && !*asJSON {
		prog = progress(c.p.stderr)
	}
	s, err := newSyncer(cfg, c.p.deps, reg, logger, prog)
	if err != nil {
		return &exitError{exitUsage, redact.Error(err, cfg.secrets()...)}
	}
	opt := syncer.Options{Full: *full, DryRun: *dryRun, Trigger: "cli", AllowMassDelete: *allowMassDelete}
	res, runErr := s.Run(ctx, cfg.syncOptions(opt))
	if *asJSON {
		printJSON(c.p.stdout, struct {
			Summary policy.RunSummary `json:"summary"`
			Plan    policy.Plan       `json:"plan"`
		}{redactSummary(res.Summary, cfg.secrets()), res.Plan})
	} else {
		printPlan(c.p.stdout, res, *dryRun)
	}
	if runErr != nil {
		return fmt.Errorf("sync: %w", redact.Error(runErr, cfg.secrets()...))
	}
	return nil
}

func printPlan(w io.Writer, res syncer.Result, dry bool) {
	s := res.Summary
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(res.Plan.Items) > 0 {
		fmt.Fprintln(tw, "ACTION\tPOLICY\tPATH\tTITLE")
		for _, it := range res.Plan.Items {
			path := it.Path
			if it.OldPath != "" && it.OldPath != it.Path {
				path = it.OldPath + " -> " + it.Path
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", it.Action, it.PolicyName, path, it.Title)
		}
	}
	for _, sk := range res.Plan.Skipped {
		fmt.Fprintf(tw, "skip\t%s\t%s\t(%s)\n", sk.PolicyName, sk.Path, sk.Reason)
	}
	for _, c := range res.Plan.Conflicts {
		fmt.Fprintf(tw, "conflict\t%s\t%s\t(wins over %s)\n", c.PolicyName, c.Winner, strings.Join(c.Losers, ", "))
	}
	_ = tw.Flush()
	api, reqs := "registry", s.Requests["registry"]
	if n, ok := s.Requests["cloudflare"]; ok {
		api, reqs = "cloudflare", n
	}
	verb := "synced"
	if dry {
		verb = "dry run, nothing written:"
	}
	fmt.Fprintf(w, "%s %s: %s mode, %d added, %d updated, %d moved, %d deleted, %d unchanged, %d skipped, %d failed (github %d requests, %s %d)\n",
		verb, short(s.CommitSHA), orDash(s.Mode), s.Added, s.Updated, s.Moved, s.Deleted, s.Unchanged, len(s.Skipped), s.ErrorCount,
		s.Requests["github"], api, reqs)
}
