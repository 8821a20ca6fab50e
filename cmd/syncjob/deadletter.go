package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/knue/syncjob/internal/config"
	"github.com/knue/syncjob/internal/deadletter"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/report"
	"github.com/knue/syncjob/internal/wire"
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
	_, reg, closeReg, err := c.p.open(cfg, wire.ChangeAccess)
	if err != nil {
		return err
	}
	defer closeReg()
	lease, err := c.p.holdLease(ctx, reg, "deadletter retry")
	if err != nil {
		return cfg.Redact(err)
	}
	if !*all {
		if err := deadletter.Retry(ctx, reg, lease, name); err != nil {
			return cfg.Redact(err)
		}
		fmt.Fprintf(c.p.stdout, "%s is back in the queue; the next sync retries it\n", report.Printable(name))
		return nil
	}
	retried, err := deadletter.RetryAll(ctx, reg, lease)
	if retried != nil {
		fmt.Fprintf(c.p.stdout, "%s back in the queue; the next sync retries them", report.Count(len(retried), "dead letter", "dead letters"))
		if len(retried) > 0 {
			fmt.Fprintf(c.p.stdout, ": %s", report.Printable(strings.Join(retried, ", ")))
		}
		fmt.Fprintln(c.p.stdout)
	}
	return cfg.Redact(err)
}

// holdLease takes the lease for an operator's change (deadletter.Hold); a
// release that fails later is a warning on stderr.
func (p *program) holdLease(ctx context.Context, reg *registry.Registry, what string) (*deadletter.Lease, error) {
	return deadletter.Hold(ctx, reg, what, p.now, func(err error) { fmt.Fprintln(p.stderr, "warning:", err) })
}
