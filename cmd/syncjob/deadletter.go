package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/queue"
	"github.com/knue/syncjob/internal/registry"
)

// deadLetterCommand is "syncjob deadletter list|retry NAME|drop NAME": the
// queue entries given up after 3 failures, and what a person does with them.
type deadLetterCommand struct{ p *program }

const deadLetterSubs = "list, retry NAME, drop NAME"

func (c *deadLetterCommand) Run(ctx context.Context, args []string) error {
	sub, name, rest, ok := deadLetterArgs(args)
	if !ok {
		return needsSubcommand("deadletter", deadLetterSubs)
	}
	fs := c.p.flagSet("deadletter " + sub)
	asJSON := fs.Bool("json", false, "print JSON")
	var yes *bool
	if sub == "drop" {
		yes = fs.Bool("yes", false, "drop without asking")
	}
	cfg, err := c.p.parse(fs, "deadletter", rest)
	if err != nil {
		return err
	}
	_, reg, closeReg, err := c.p.open(cfg)
	if err != nil {
		return err
	}
	defer closeReg()
	switch sub {
	case "list":
		err = c.list(ctx, reg, *asJSON)
	case "retry":
		err = c.retry(ctx, reg, name)
	default:
		confirmed := *yes || c.p.stdin == nil || !c.p.stdinTerminal
		err = c.drop(ctx, reg, name, confirmed)
	}
	return cfg.redact(err)
}

// deadLetterArgs splits "SUB [NAME] [flags]".
func deadLetterArgs(args []string) (sub, name string, rest []string, ok bool) {
	if len(args) == 0 {
		return "", "", nil, false
	}
	sub, rest = args[0], args[1:]
	switch sub {
	case "list":
		return sub, "", rest, true
	case "retry", "drop":
		if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
			return "", "", nil, false
		}
		return sub, rest[0], rest[1:], true
	}
	return "", "", nil, false
}

func (c *deadLetterCommand) list(ctx context.Context, reg *registry.Registry, asJSON bool) error {
	d, err := reg.DeadLetters(ctx)
	if err != nil && d == nil {
		return fmt.Errorf("deadletter list: %w", err)
	}
	letters := sortedValues(d)
	if asJSON {
		printJSON(c.p.stdout, letters)
		return nil
	}
	tw := tabwriter.NewWriter(c.p.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tOPERATION\tSHA\tTRIES\tDEAD SINCE\tREASON")
	for _, e := range letters {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", e.PolicyName, e.Operation, short(e.SHA), e.RetryCount, e.DeadAt, e.Reason)
	}
	_ = tw.Flush()
	fmt.Fprintf(c.p.stdout, "%d dead letters\n", len(letters))
	return nil
}

// deadLetter reads the dead letter of name. An unreadable one is returned
// with its name and the error, so that it can still be dropped.
func deadLetter(ctx context.Context, reg *registry.Registry, name string) (policy.DeadLetter, error) {
	d, err := reg.DeadLetter(ctx, name)
	switch {
	case errors.Is(err, policy.ErrNotFound):
		return policy.DeadLetter{}, fmt.Errorf("no dead letter named %q (syncjob deadletter list)", name)
	case queue.IsUnreadable(err):
		return policy.DeadLetter{QueueEntry: policy.QueueEntry{PolicyName: name}, Reason: "unreadable value"}, err
	}
	return d, err
}

// retry puts the dead letter back in the queue (its failures no longer
// counted) for the next run, then removes it.
func (c *deadLetterCommand) retry(ctx context.Context, reg *registry.Registry, name string) error {
	if _, err := deadLetter(ctx, reg, name); err != nil {
		return fmt.Errorf("deadletter retry: %w", err)
	}
	if err := queue.RetryDeadLetter(ctx, reg, name, c.p.now()); err != nil {
		return fmt.Errorf("deadletter retry %s: %w", name, err)
	}
	fmt.Fprintf(c.p.stdout, "%s is back in the queue; the next sync retries it\n", name)
	return nil
}

// drop forgets a dead letter, after asking unless confirmed. The registry
// entry stays as it is.
func (c *deadLetterCommand) drop(ctx context.Context, reg *registry.Registry, name string, confirmed bool) error {
	d, err := deadLetter(ctx, reg, name)
	if err != nil && !queue.IsUnreadable(err) { // an unreadable one can still be dropped
		return fmt.Errorf("deadletter drop: %w", err)
	}
	if !confirmed {
		fmt.Fprintf(c.p.stderr, "drop the dead letter of %s (%s of %s, %d tries: %s)? [y/N] ", name, d.Operation, short(d.SHA), d.RetryCount, d.Reason)
		answer, _ := bufio.NewReader(c.p.stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(c.p.stderr, "kept")
			return &exitError{code: exitFailed}
		}
	}
	if err := queue.DropDeadLetter(ctx, reg, name); err != nil {
		return fmt.Errorf("deadletter drop %s: %w", name, err)
	}
	fmt.Fprintf(c.p.stdout, "dropped the dead letter of %s\n", name)
	return nil
}
