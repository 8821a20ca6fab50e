package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/queue"
	"github.com/knue/syncjob/internal/registry"
)

// operatorSubs are the subcommands of the operator commands.
var operatorSubs = map[string]string{
	"queue":      "list",
	"deadletter": "list, retry NAME, drop NAME",
}

// operatorArgs splits "SUB [NAME] [flags]" of the queue and deadletter commands.
func operatorArgs(cmd string, args []string) (sub, name string, rest []string, ok bool) {
	if len(args) == 0 {
		return "", "", nil, false
	}
	sub, rest = args[0], args[1:]
	switch {
	case sub == "list":
		return sub, "", rest, true
	case cmd == "deadletter" && (sub == "retry" || sub == "drop"):
		if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
			return "", "", nil, false
		}
		return sub, rest[0], rest[1:], true
	}
	return "", "", nil, false
}

// operator answers the commands an operator uses to see and steer the job.
type operator struct {
	reg            *registry.Registry
	now            func() time.Time
	stdout, stderr io.Writer
	asJSON         bool
}

func (o operator) printJSON(v any) {
	enc := json.NewEncoder(o.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func (o operator) fail(format string, args ...any) int {
	fmt.Fprintf(o.stderr, "syncjob: "+format+"\n", args...)
	return exitFailed
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

func (o operator) status(ctx context.Context, n int) int {
	var rep statusReport
	var err error
	if rep.LastRun, err = o.reg.LastRun(ctx); err != nil {
		return o.fail("status: %v", err)
	}
	if rep.LastCommit, err = o.reg.LastCommit(ctx); err != nil {
		return o.fail("status: %v", err)
	}
	q, err := o.reg.Queue(ctx)
	if err != nil && q == nil {
		return o.fail("status: %v", err)
	}
	rep.QueueDepth = len(q)
	for _, e := range q {
		if e.ErrorMessage != nil {
			rep.WaitingRetry++
		}
	}
	dead, err := o.reg.DeadLetters(ctx)
	if err != nil && dead == nil {
		return o.fail("status: %v", err)
	}
	rep.DeadLetters = sortedValues(dead)
	if rep.Policies, err = o.reg.CountPolicies(ctx); err != nil {
		return o.fail("status: %v", err)
	}
	// The last success may be older than the recent runs shown: the
	// history's listing says, without reading every run.
	index, err := o.reg.RunIndex(ctx)
	if err != nil {
		return o.fail("status: %v", err)
	}
	for _, ref := range index {
		if ref.Status == policy.RunSuccess {
			rep.LastSuccess = ref.At.Format(time.RFC3339)
			rep.SinceLastSuccess = o.now().Sub(ref.At).Round(time.Minute).String()
			break
		}
	}
	if rep.Runs, err = o.reg.Runs(ctx, n); err != nil && rep.Runs == nil {
		return o.fail("status: %v", err)
	}
	if o.asJSON {
		o.printJSON(rep)
		return exitOK
	}
	w := o.stdout
	if lr := rep.LastRun; lr == nil {
		fmt.Fprintln(w, "last run       none recorded")
	} else {
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
	if len(rep.Runs) > 0 {
		fmt.Fprintln(w, "recent runs")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  TIME\tSTATUS\tMODE\tTRIGGER\tADDED\tUPDATED\tDELETED\tFAILED\tCOMMIT\tDURATION")
		for _, r := range rep.Runs {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", r.Timestamp, r.Status, orDash(r.Mode), orDash(r.Trigger),
				r.Added, r.Updated+r.Moved, r.Deleted, r.ErrorCount, orDash(short(r.CommitSHA)), time.Duration(r.DurationMs)*time.Millisecond)
		}
		_ = tw.Flush()
	}
	return exitOK
}

func (o operator) queueList(ctx context.Context) int {
	q, err := o.reg.Queue(ctx)
	if err != nil && q == nil {
		return o.fail("queue list: %v", err)
	}
	entries := sortedValues(q)
	if o.asJSON {
		o.printJSON(entries)
		return exitOK
	}
	tw := tabwriter.NewWriter(o.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tOPERATION\tSHA\tRETRIES\tCREATED\tERROR")
	for _, e := range entries {
		msg := ""
		if e.ErrorMessage != nil {
			msg = *e.ErrorMessage
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", e.PolicyName, e.Operation, short(e.SHA), e.RetryCount, e.CreatedAt, msg)
	}
	_ = tw.Flush()
	fmt.Fprintf(o.stdout, "%d entries\n", len(entries))
	if err != nil {
		fmt.Fprintln(o.stderr, "syncjob: queue list:", err)
	}
	return exitOK
}

func (o operator) deadLetterList(ctx context.Context) int {
	d, err := o.reg.DeadLetters(ctx)
	if err != nil && d == nil {
		return o.fail("deadletter list: %v", err)
	}
	letters := sortedValues(d)
	if o.asJSON {
		o.printJSON(letters)
		return exitOK
	}
	tw := tabwriter.NewWriter(o.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tOPERATION\tSHA\tTRIES\tDEAD SINCE\tREASON")
	for _, e := range letters {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", e.PolicyName, e.Operation, short(e.SHA), e.RetryCount, e.DeadAt, e.Reason)
	}
	_ = tw.Flush()
	fmt.Fprintf(o.stdout, "%d dead letters\n", len(letters))
	return exitOK
}

func (o operator) deadLetter(ctx context.Context, name string) (policy.DeadLetter, error) {
	d, err := o.reg.DeadLetter(ctx, name)
	switch {
	case errors.Is(err, policy.ErrNotFound):
		return policy.DeadLetter{}, fmt.Errorf("no dead letter named %q (syncjob deadletter list)", name)
	case queue.IsUnreadable(err):
		return policy.DeadLetter{QueueEntry: policy.QueueEntry{PolicyName: name}, Reason: "unreadable value"}, err
	}
	return d, err
}

// deadLetterRetry puts the dead letter back in the queue (its failures no
// longer counted) for the next run, then removes it.
func (o operator) deadLetterRetry(ctx context.Context, name string) int {
	if _, err := o.deadLetter(ctx, name); err != nil {
		return o.fail("deadletter retry: %v", err)
	}
	if err := queue.RetryDeadLetter(ctx, o.reg, name, o.now()); err != nil {
		return o.fail("deadletter retry %s: %v", name, err)
	}
	fmt.Fprintf(o.stdout, "%s is back in the queue; the next sync retries it\n", name)
	return exitOK
}

// deadLetterDrop forgets a dead letter. The registry entry stays as it is.
func (o operator) deadLetterDrop(ctx context.Context, name string, confirmed bool, stdin io.Reader) int {
	d, err := o.deadLetter(ctx, name)
	if err != nil && !queue.IsUnreadable(err) { // an unreadable one can still be dropped
		return o.fail("deadletter drop: %v", err)
	}
	if !confirmed {
		fmt.Fprintf(o.stderr, "drop the dead letter of %s (%s of %s, %d tries: %s)? [y/N] ", name, d.Operation, short(d.SHA), d.RetryCount, d.Reason)
		answer, _ := bufio.NewReader(stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(o.stderr, "kept")
			return exitFailed
		}
	}
	if err := queue.DropDeadLetter(ctx, o.reg, name); err != nil {
		return o.fail("deadletter drop %s: %v", name, err)
	}
	fmt.Fprintf(o.stdout, "dropped the dead letter of %s\n", name)
	return exitOK
}

func sortedValues[V any](m map[string]V) []V {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]V, 0, len(keys))
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}
