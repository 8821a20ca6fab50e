package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/knue/syncjob/internal/config"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/report"
)

const deadLetterUsage = `Usage: syncjob deadletter list [--json] | retry NAME | retry --all | drop NAME [--yes]

A dead letter is a write given up after 3 failed tries. Its version is held
back: the registry keeps the policy as it was, and every run reports it, until
a person retries or drops it.

Subcommands:
  list          print the dead letters
  retry NAME    put NAME back in the queue; the next sync writes it
  retry --all   the same for every dead letter
  drop NAME     forget NAME's dead letter (asks first; --yes when not on a terminal)

Run "syncjob deadletter SUBCOMMAND --help" for its flags and settings.
`

// deadLetterListCommand is "syncjob deadletter list".
type deadLetterListCommand struct{ p *program }

var deadLetterListHelp = help{
	name:   "deadletter list",
	usage:  "deadletter list [--json] [settings]",
	about:  "Prints the dead letters: the writes given up after 3 failures. Reads the registry only.",
	groups: config.Registry | config.Logging,
}

func (c *deadLetterListCommand) Run(ctx context.Context, args []string) error {
	return listing(ctx, c.p, deadLetterListHelp, args, func(ctx context.Context, reg *registry.Registry) ([]policy.DeadLetter, error) {
		d, err := reg.DeadLetters(ctx)
		if d == nil {
			return nil, err
		}
		return report.SortedValues(d), err
	}, report.DeadLetters)
}

// deadLetterRetryCommand is "syncjob deadletter retry NAME|--all".
type deadLetterRetryCommand struct{ p *program }

var deadLetterRetryHelp = help{
	name:  "deadletter retry",
	usage: "deadletter retry NAME | --all [settings]",
	about: `Puts a dead letter (or, with --all, every one) back in the queue, its failures
forgotten: the next sync writes its version. Refused while a sync holds the
lease; holds it while it writes, and says it retried only once it read back
that the retry holds.`,
	groups: config.Registry | config.Logging,
	args:   1,
}

func (c *deadLetterRetryCommand) Run(ctx context.Context, args []string) error {
	fs := c.p.flagSet("deadletter retry")
	all := config.BoolVar(fs, "all", "retry every dead letter")
	cfg, name, err := c.p.parseName(fs, deadLetterRetryHelp, args)
	if err != nil {
		return err
	}
	if (name == "") == !*all {
		return usageError("deadletter retry", "needs the NAME of a dead letter, or --all (syncjob deadletter list)")
	}
	_, reg, closeReg, err := c.p.open(cfg, changeAccess)
	if err != nil {
		return err
	}
	defer closeReg()
	lease, err := c.p.holdLease(ctx, reg, "deadletter retry")
	if err != nil {
		return cfg.Redact(err)
	}
	if *all {
		return cfg.Redact(c.retryAll(ctx, reg, lease))
	}
	return cfg.Redact(c.retry(ctx, reg, lease, name))
}

// retry retries the dead letter of name under the lease and says it did
// only once it verified that the retry holds.
func (c *deadLetterRetryCommand) retry(ctx context.Context, reg *registry.Registry, lease *operatorLease, name string) error {
	if _, err := deadLetter(ctx, reg, name); err != nil {
		return errors.Join(fmt.Errorf("deadletter retry: %w", err), lease.end(ctx, false))
	}
	if err := reg.RetryDeadLetter(ctx, name, c.p.now()); err != nil {
		return errors.Join(fmt.Errorf("deadletter retry %s: %w", name, err), lease.end(ctx, false))
	}
	if err := lease.end(ctx, true, name); err != nil {
		return err
	}
	fmt.Fprintf(c.p.stdout, "%s is back in the queue; the next sync retries it\n", report.Printable(name))
	return nil
}

// retryAll retries every dead letter that can be read; the unreadable ones
// are named, to be dropped.
func (c *deadLetterRetryCommand) retryAll(ctx context.Context, reg *registry.Registry, lease *operatorLease) error {
	letters, err := reg.DeadLetters(ctx)
	if err != nil && letters == nil {
		return errors.Join(fmt.Errorf("deadletter retry --all: %w", err), lease.end(ctx, false))
	}
	var retried []string
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(letters)) {
		if rerr := reg.RetryDeadLetter(ctx, name, c.p.now()); rerr != nil {
			errs = append(errs, rerr)
			continue
		}
		retried = append(retried, name)
	}
	if err := lease.end(ctx, true, retried...); err != nil {
		return err
	}
	fmt.Fprintf(c.p.stdout, "%s back in the queue; the next sync retries them", report.Count(len(retried), "dead letter", "dead letters"))
	if len(retried) > 0 {
		fmt.Fprintf(c.p.stdout, ": %s", report.Printable(strings.Join(retried, ", ")))
	}
	fmt.Fprintln(c.p.stdout)
	var bad *registry.DecodeError
	if errors.As(err, &bad) {
		for _, key := range slices.Sorted(maps.Keys(bad.Problems)) {
			name := strings.TrimPrefix(key, registry.DeadLetterPrefix)
			errs = append(errs, fmt.Errorf("%s is unreadable and cannot be retried (syncjob deadletter drop %s --yes)", name, name))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("deadletter retry --all: %w", errors.Join(errs...))
	}
	return nil
}

// deadLetter reads the dead letter of name. An unreadable one is returned
// with its name and the error, so that it can still be dropped.
func deadLetter(ctx context.Context, reg *registry.Registry, name string) (policy.DeadLetter, error) {
	d, err := reg.DeadLetter(ctx, name)
	switch {
	case errors.Is(err, policy.ErrNotFound):
		return policy.DeadLetter{}, fmt.Errorf("no dead letter named %q (syncjob deadletter list)", name)
	case registry.IsUnreadable(err):
		return policy.DeadLetter{QueueEntry: policy.QueueEntry{PolicyName: name}, Reason: "unreadable value"}, err
	}
	return d, err
}

// notDuringASync refuses an operator's change while a sync holds the lease
// (before it asks anything); the change itself holds the lease
// (deadletter_lease.go). It returns the lease as read.
func (p *program) notDuringASync(ctx context.Context, reg *registry.Registry, what string) (*registry.Lease, error) {
	l, err := reg.Lease(ctx)
	if err != nil && !registry.IsUnreadable(err) {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if l != nil && l.Holds(p.now()) {
		return l, syncRunning(what, *l)
	}
	return l, nil
}
