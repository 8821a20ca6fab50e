package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/knue/syncjob/internal/config"
	"github.com/knue/syncjob/internal/deadletter"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/report"
	"github.com/knue/syncjob/internal/wire"
)

// deadLetterDropCommand is "syncjob deadletter drop NAME": forget a dead
// letter, after asking.
type deadLetterDropCommand struct{ p *program }

var deadLetterDropHelp = help{
	name:  "deadletter drop",
	usage: "deadletter drop NAME [--yes] [settings]",
	about: `Forgets the dead letter of NAME and its failures, after asking on a terminal
(elsewhere --yes is needed). It no longer holds a version back: the registry
keeps the policy as it is until the next run, which plans NAME from the head
again (and writes the head's version, counting failures from zero). Refused
while a sync holds the lease; holds it while it writes, and says it dropped
only once it read back that the drop holds.`,
	groups: config.Registry | config.Logging,
	args:   1,
}

func (c *deadLetterDropCommand) Run(ctx context.Context, args []string) error {
	fs := c.p.flagSet("deadletter drop")
	yes := config.BoolVar(fs, "yes", "drop without asking (needed when stdin is not a terminal)")
	cfg, name, err := c.p.parseName(fs, deadLetterDropHelp, args)
	if err != nil {
		return err
	}
	if name == "" {
		return usageError("deadletter drop", "needs the NAME of a dead letter (syncjob deadletter list)")
	}
	if !*yes && !c.p.canAsk() {
		return usageError("deadletter drop", "stdin is not a terminal to ask on: add --yes to drop without asking")
	}
	_, reg, closeReg, err := c.p.open(cfg, wire.ChangeAccess)
	if err != nil {
		return err
	}
	defer closeReg()
	return cfg.Redact(c.drop(ctx, reg, name, *yes))
}

// drop asks, then drops under the lease and says it did only once it
// verified that the drop holds (deadletter.Drop).
func (c *deadLetterDropCommand) drop(ctx context.Context, reg *registry.Registry, name string, confirmed bool) error {
	if err := deadletter.NotDuringASync(ctx, reg, "deadletter drop", c.p.now()); err != nil {
		return err
	}
	d, err := deadletter.Find(ctx, reg, name)
	if err != nil && !registry.IsUnreadable(err) { // an unreadable one can still be dropped
		return fmt.Errorf("deadletter drop: %w", err)
	}
	stays, err := deadletter.WhatStays(ctx, reg, name)
	if err != nil {
		return fmt.Errorf("deadletter drop: %w", err)
	}
	if !confirmed {
		question := fmt.Sprintf("drop the dead letter of %s (%s of %s, %d tries: %s)?\n%s.",
			name, d.Operation, report.OrDash(report.Short(d.SHA)), d.RetryCount, d.Reason, stays)
		if !c.p.confirm(question) {
			fmt.Fprintln(c.p.stderr, "kept")
			return &exitError{code: exitFailed}
		}
	}
	lease, err := c.p.holdLease(ctx, reg, "deadletter drop")
	if err != nil {
		return err
	}
	if err := deadletter.Drop(ctx, reg, lease, name); err != nil {
		return err
	}
	fmt.Fprintf(c.p.stdout, "dropped the dead letter of %s; %s\n", report.Printable(name), stays)
	return nil
}

// canAsk reports whether a question can be put to a person on stdin.
func (p *program) canAsk() bool { return p.stdin != nil && p.stdinTerminal }

// confirm puts a yes/no question on stderr and reads the answer; only y or
// yes is a yes.
func (p *program) confirm(question string) bool {
	fmt.Fprintf(p.stderr, "%s [y/N] ", question)
	answer, err := bufio.NewReader(p.stdin).ReadString('\n')
	if err != nil && err != io.EOF {
		return false
	}
	a := strings.ToLower(strings.TrimSpace(answer))
	return a == "y" || a == "yes"
}
