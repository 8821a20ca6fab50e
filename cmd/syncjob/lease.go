package main

import (
	"context"
	"fmt"

	"github.com/knue/syncjob/internal/config"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/report"
	"github.com/knue/syncjob/internal/syncer"
	"github.com/knue/syncjob/internal/wire"
)

// leaseUsage states the lease's times as the code uses them (syncer.DefaultLeaseTTL,
// renewed every third of it).
var leaseUsage = fmt.Sprintf(`Usage: syncjob lease show [--json] | release --id ID [--yes]

The lease (metadata:sync:lease) is the advisory single-writer lock of the
registry: every run that writes takes it before it reads what it plans from,
renews it every %s while it lasts and releases it once its record has landed;
it expires by itself %s after the last renewal. Workers KV has no
compare-and-swap, so it keeps out a run that starts while another runs, not a
perfect race (Lambda's reserved concurrency is the hard guarantee; the embedded
file is also locked by its writer, in <path>.lock, which "show" names, and a
lease whose writer is gone is ended as soon as the next writer opens the file).
A lease that was never released tells the next run that its holder did not
finish: that run plans from the head tree.

Subcommands:
  show      print the lease, and the writer of the embedded file
  release   end a lease a crashed run left: give its id, which show prints
            (asks first; --yes when not on a terminal)

Run "syncjob lease SUBCOMMAND --help" for its flags and settings.
`, report.Minutes(syncer.DefaultLeaseTTL/3), report.Minutes(syncer.DefaultLeaseTTL))

// leaseShowCommand is "syncjob lease show".
type leaseShowCommand struct{ p *program }

var leaseShowHelp = help{
	name:   "lease show",
	usage:  "lease show [--json] [settings]",
	about:  "Prints the single-writer lease, and which process writes the embedded file. Reads the registry only.",
	groups: config.Registry | config.Logging,
}

func (c *leaseShowCommand) Run(ctx context.Context, args []string) error {
	fs := c.p.flagSet("lease show")
	asJSON := config.BoolVar(fs, "json", "print JSON")
	cfg, _, err := c.p.parse(fs, leaseShowHelp, args)
	if err != nil {
		return err
	}
	_, reg, closeReg, err := c.p.open(cfg, wire.ReadAccess)
	if err != nil {
		return err
	}
	defer closeReg()
	l, err := reg.Lease(ctx)
	if err != nil {
		return cfg.Redact(fmt.Errorf("lease show: %w", err))
	}
	out := struct {
		Lease   *registry.Lease      `json:"lease"`
		Expired bool                 `json:"expired,omitempty"`
		Writer  *registry.BoltWriter `json:"writer,omitempty"`
	}{Lease: l, Expired: l != nil && l.Expired(c.p.now())}
	if !cfg.Cloudflare() {
		out.Writer, _ = registry.BoltHolder(cfg.RegistryPath)
	}
	if *asJSON {
		report.PrintJSON(c.p.stdout, out)
		return nil
	}
	fmt.Fprintf(c.p.stdout, "lease   %s\n", report.Printable(report.LeaseText(out.Lease, out.Expired)))
	if !cfg.Cloudflare() {
		writer := "none"
		if out.Writer != nil {
			writer = out.Writer.String() + " (a sync is running)"
		}
		fmt.Fprintf(c.p.stdout, "writer  %s\n", writer)
	}
	return nil
}

// leaseReleaseCommand is "syncjob lease release".
type leaseReleaseCommand struct{ p *program }

var leaseReleaseHelp = help{
	name:  "lease release",
	usage: "lease release --id ID [--yes] [settings]",
	about: `Ends the lease whose id (its holder, as "lease show" prints it) is ID, after
asking on a terminal (elsewhere --yes is needed): for a lease a crashed run
left, so the next run need not wait for it to expire. Without --id it prints
the lease and its id and exits 2; when the lease is not ID's (another run took
it since) it releases nothing and exits 4. It stays marked as not released, so that next run still plans
from the head tree. Ending the lease of a run that is still going lets a second
writer in beside it.`,
	groups: config.Registry | config.Logging,
}

func (c *leaseReleaseCommand) Run(ctx context.Context, args []string) error {
	fs := c.p.flagSet("lease release")
	yes := config.BoolVar(fs, "yes", "release without asking (needed when stdin is not a terminal)")
	var id string
	fs.Var(&config.StringFlag{P: &id, Kind: "ID"}, "id", "the id of the lease to release, as lease show prints it: a lease held by another is kept")
	cfg, _, err := c.p.parse(fs, leaseReleaseHelp, args)
	if err != nil {
		return err
	}
	if id != "" && !*yes && !c.p.canAsk() {
		return usageError("lease release", "stdin is not a terminal to ask on: add --yes to release without asking")
	}
	_, reg, closeReg, err := c.p.open(cfg, wire.ChangeAccess)
	if err != nil {
		return err
	}
	defer closeReg()
	l, err := reg.Lease(ctx)
	if err != nil {
		return cfg.Redact(fmt.Errorf("lease release: %w", err))
	}
	if l == nil || l.Released() {
		fmt.Fprintln(c.p.stdout, "no lease to release")
		return nil
	}
	if err := c.checkID(*l, id); err != nil {
		return err
	}
	if !*yes {
		state := "expired"
		if !l.Expired(c.p.now()) {
			state = "STILL VALID: a run may be in progress"
		}
		if !c.p.confirm(fmt.Sprintf("release the lease of %s (taken %s, until %s; %s)?", l.Owner, l.AcquiredAt, l.ExpiresAt, state)) {
			fmt.Fprintln(c.p.stderr, "kept")
			return &exitError{code: exitFailed}
		}
	}
	if err := reg.BreakLease(ctx, *l, c.p.now()); err != nil {
		return cfg.Redact(fmt.Errorf("lease release: %w", err))
	}
	fmt.Fprintf(c.p.stdout, "released the lease of %s; the next run plans from the head tree, since that run did not finish\n", l.Owner)
	return nil
}

// checkID refuses to release a lease but the one named: without an id it
// shows the lease and asks for its id; another id means the lease changed
// hands since it was looked at.
func (c *leaseReleaseCommand) checkID(l registry.Lease, id string) error {
	expired := l.Expired(c.p.now())
	switch {
	case id == "":
		fmt.Fprintf(c.p.stdout, "lease   %s\n", report.Printable(report.LeaseText(&l, expired)))
		return usageError("lease release", "give the id of the lease to release: syncjob lease release --id "+report.ShellQuote(l.Owner))
	case id != l.Owner:
		return &exitError{exitRefused, fmt.Errorf("lease release: the lease is held by %s, not %s: nothing released (syncjob lease show)", report.Printable(l.Owner), report.Printable(id))}
	}
	return nil
}
