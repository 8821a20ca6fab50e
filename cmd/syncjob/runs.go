package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/knue/syncjob/internal/policy"
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
	groups: groupRegistry | groupLogging,
}

var runsShowHelp = help{
	name:   "runs show",
	usage:  "runs show RUN [--json] [settings]",
	about:  "Prints one run of the run history (RUN: its id, from syncjob runs) and the policies it added, updated, moved and deleted (the first 100; the rest are counted).",
	groups: groupRegistry | groupLogging,
	args:   1,
}

func (c *runsCommand) Run(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "show" {
		return c.show(ctx, args[1:])
	}
	fs := c.p.flagSet("runs")
	asJSON := boolVar(fs, "json", "print JSON")
	limit := fs.Int("limit", 20, "how many runs to show, newest first (0: all)")
	cfg, _, err := c.p.parse(fs, runsHelp, args)
	if err == nil && *limit < 0 {
		err = usageError("runs", fmt.Sprintf("-limit: %d is negative; give how many runs to show (0: all)", *limit))
	}
	if err != nil {
		return err
	}
	_, reg, closeReg, err := c.p.open(cfg, readAccess)
	if err != nil {
		return err
	}
	defer closeReg()
	runs, err := reg.Runs(ctx, *limit)
	if err != nil && runs == nil {
		return cfg.redact(fmt.Errorf("runs: %w", err))
	}
	if runs == nil {
		runs = []policy.RunSummary{}
	}
	if *asJSON {
		printJSON(c.p.stdout, runs)
	} else {
		printRunList(c.p.stdout, runs)
	}
	if err != nil {
		fmt.Fprintf(c.p.stderr, "syncjob: runs: %v\n", cfg.redact(err))
	}
	return nil
}

func (c *runsCommand) show(ctx context.Context, args []string) error {
	fs := c.p.flagSet("runs show")
	asJSON := boolVar(fs, "json", "print JSON")
	cfg, id, err := c.p.parseName(fs, runsShowHelp, args)
	if err != nil {
		return err
	}
	if id == "" {
		return usageError("runs show", "needs the id of a run (syncjob runs)")
	}
	_, reg, closeReg, err := c.p.open(cfg, readAccess)
	if err != nil {
		return err
	}
	defer closeReg()
	run, err := reg.RunByID(ctx, id)
	if errors.Is(err, policy.ErrNotFound) {
		return &exitError{code: exitFailed, err: fmt.Errorf("runs show: no run %s in the run history (it keeps 90 days; syncjob runs lists them)", printable(id))}
	}
	if err != nil {
		return cfg.redact(fmt.Errorf("runs show: %w", err))
	}
	if *asJSON {
		printJSON(c.p.stdout, run)
		return nil
	}
	printRun(c.p.stdout, run)
	return nil
}

// printRunList prints runs one line each.
func printRunList(w io.Writer, runs []policy.RunSummary) {
	t := &table{}
	t.add("TIME", "STATUS", "MODE", "TRIGGER", "ADDED", "UPDATED", "MOVED", "DELETED", "FAILED", "COMMIT", "RUN")
	for _, r := range runs {
		t.add(r.Timestamp, r.Status, orDash(r.Mode), orDash(r.Trigger), fmt.Sprint(r.Added), fmt.Sprint(r.Updated),
			fmt.Sprint(r.Moved), fmt.Sprint(r.Deleted), fmt.Sprint(r.ErrorCount), orDash(short(r.CommitSHA)), r.RunID)
	}
	t.write(w, "", palette{})
	fmt.Fprintln(w, count(len(runs), "run", "runs"))
}

// printRun prints one run: its summary as status shows the last run, then
// its changes.
func printRun(w io.Writer, r policy.RunSummary) {
	line := func(label, format string, args ...any) {
		fmt.Fprintf(w, "%-15s%s\n", label, printable(fmt.Sprintf(format, args...)))
	}
	printRunSummary(line, "run", &r)
	if r.Repo != "" {
		line("repository", "%s, branch %s", r.Repo, r.Branch)
	}
	if len(r.Changes) == 0 {
		line("changes", "none")
		return
	}
	line("changes", "%s", count(len(r.Changes)+r.ChangesOmitted, "change", "changes"))
	t := &table{}
	t.add("ACTION", "POLICY", "PATH", "OLD SHA", "NEW SHA")
	for _, c := range r.Changes {
		path := c.Path
		switch {
		case c.Action == policy.ActDelete:
			path = c.OldPath
		case c.OldPath != "" && c.OldPath != c.Path:
			path = c.OldPath + " -> " + c.Path
		}
		t.add(string(c.Action), c.PolicyName, path, orDash(short(c.OldSHA)), orDash(short(c.SHA)))
	}
	t.write(w, "  ", palette{})
	if r.ChangesOmitted > 0 {
		fmt.Fprintf(w, "  … and %d more (the history keeps the first %d)\n", r.ChangesOmitted, policy.MaxRunChanges)
	}
}
