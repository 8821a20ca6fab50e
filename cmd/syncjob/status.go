package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// statusCommand is "syncjob status": what the job did last and what waits.
type statusCommand struct{ p *program }

func (c *statusCommand) Run(ctx context.Context, args []string) error {
	fs := c.p.flagSet("status")
	asJSON := fs.Bool("json", false, "print JSON")
	runs := fs.Int("runs", 10, "how many recent runs to show")
	cfg, err := c.p.parse(fs, "status", args)
	if err != nil {
		return err
	}
	_, reg, closeReg, err := c.p.open(cfg)
	if err != nil {
		return err
	}
	defer closeReg()
	rep, err := gatherStatus(ctx, reg, c.p.now(), *runs)
	if err != nil {
		return cfg.redact(fmt.Errorf("status: %w", err))
	}
	if *asJSON {
		printJSON(c.p.stdout, rep)
	} else {
		printStatus(c.p.stdout, rep)
	}
	return nil
}

// statusReport is what "syncjob status --json" prints.
type statusReport struct {
	LastRun          *policy.RunSummary  `json:"lastRun"`
	LastCommit       string              `json:"lastCommit"`
	LastSuccess      string              `json:"lastSuccess,omitempty"`
	SinceLastSuccess string              `json:"sinceLastSuccess,omitempty"`
	Policies         int                 `json:"policies"`
	QueueDepth       int                 `json:"queueDepth"`
	WaitingRetry     int                 `json:"waitingRetry"`
	DeadLetters      []policy.DeadLetter `json:"deadLetters"`
	Runs             []policy.RunSummary `json:"runs"`
}

// gatherStatus reads the report from the registry; runs is how many recent
// runs it lists.
func gatherStatus(ctx context.Context, reg *registry.Registry, now time.Time, runs int) (statusReport, error) {
	var rep statusReport
	var err error
	if rep.LastRun, err = reg.LastRun(ctx); err != nil {
		return rep, err
	}
	if rep.LastCommit, err = reg.LastCommit(ctx); err != nil {
		return rep, err
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
	dead, err := reg.DeadLetters(ctx)
	if err != nil && dead == nil {
		return rep, err
	}
	rep.DeadLetters = sortedValues(dead)
	if rep.Policies, err = reg.CountPolicies(ctx); err != nil {
		return rep, err
	}
	// The last success may be older than the recent runs shown: the
	// history's listing says, without reading every run.
	index, err := reg.RunIndex(ctx)
	if err != nil {
		return rep, err
	}
	for _, ref := range index {
		if ref.Status == policy.RunSuccess {
			rep.LastSuccess = ref.At.Format(time.RFC3339)
			rep.SinceLastSuccess = now.Sub(ref.At).Round(time.Minute).String()
			break
		}
	}
	if rep.Runs, err = reg.Runs(ctx, runs); err != nil && rep.Runs == nil {
		return rep, err
	}
	return rep, nil
}

func printStatus(w io.Writer, rep statusReport) {
	printLastRun(w, rep.LastRun)
	fmt.Fprintf(w, "last commit    %s\n", orDash(rep.LastCommit))
	if rep.LastSuccess == "" {
		fmt.Fprintln(w, "last success   none in the run history")
	} else {
		fmt.Fprintf(w, "last success   %s (%s ago)\n", rep.LastSuccess, rep.SinceLastSuccess)
	}
	fmt.Fprintf(w, "registry       %d policies\n", rep.Policies)
	fmt.Fprintf(w, "queue          %d entries, %d waiting for retry\n", rep.QueueDepth, rep.WaitingRetry)
	fmt.Fprintf(w, "dead letters   %d\n", len(rep.DeadLetters))
	for _, d := range rep.DeadLetters {
		fmt.Fprintf(w, "  %s  (%s, %d tries, since %s): %s\n", d.PolicyName, d.Operation, d.RetryCount, d.DeadAt, d.Reason)
	}
	printRecentRuns(w, rep.Runs)
}

func printLastRun(w io.Writer, lr *policy.RunSummary) {
	if lr == nil {
		fmt.Fprintln(w, "last run       none recorded")
		return
	}
	fmt.Fprintf(w, "last run       %s  %s  (%s mode, trigger %s, run %s, %s)\n", lr.Timestamp, strings.ToUpper(lr.Status), orDash(lr.Mode), orDash(lr.Trigger), lr.RunID, time.Duration(lr.DurationMs)*time.Millisecond)
	fmt.Fprintf(w, "commits        %s -> %s\n", orDash(short(lr.PreviousCommitSHA)), orDash(short(lr.CommitSHA)))
	fmt.Fprintf(w, "counts         %d added, %d updated, %d moved, %d deleted, %d unchanged, %d skipped, %d conflicts, %d failed\n",
		lr.Added, lr.Updated, lr.Moved, lr.Deleted, lr.Unchanged, len(lr.Skipped), len(lr.Conflicts), lr.ErrorCount)
	if lr.Error != "" {
		fmt.Fprintf(w, "error          %s\n", lr.Error)
	}
	for _, f := range lr.Failures {
		fmt.Fprintf(w, "failed         %s: %s\n", f.PolicyName, f.Error)
	}
}

func printRecentRuns(w io.Writer, runs []policy.RunSummary) {
	if len(runs) == 0 {
		return
	}
	fmt.Fprintln(w, "recent runs")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TIME\tSTATUS\tMODE\tTRIGGER\tADDED\tUPDATED\tDELETED\tFAILED\tCOMMIT\tDURATION")
	for _, r := range runs {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", r.Timestamp, r.Status, orDash(r.Mode), orDash(r.Trigger),
			r.Added, r.Updated+r.Moved, r.Deleted, r.ErrorCount, orDash(short(r.CommitSHA)), time.Duration(r.DurationMs)*time.Millisecond)
	}
	_ = tw.Flush()
}
