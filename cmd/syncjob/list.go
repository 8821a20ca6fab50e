package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// listCommand is "syncjob list": the registry's policies.
type listCommand struct{ p *program }

func (c *listCommand) Run(ctx context.Context, args []string) error {
	fs := c.p.flagSet("list")
	asJSON := fs.Bool("json", false, "print JSON")
	cfg, err := c.p.parse(fs, "list", args)
	if err != nil {
		return err
	}
	_, reg, closeReg, err := c.p.open(cfg)
	if err != nil {
		return err
	}
	defer closeReg()
	return cfg.redact(listPolicies(ctx, reg, *asJSON, c.p.stdout, c.p.stderr))
}

func listPolicies(ctx context.Context, reg *registry.Registry, asJSON bool, stdout, stderr io.Writer) error {
	entries, problems, err := reg.Policies(ctx)
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	slices.Sort(names)
	if asJSON {
		list := make([]policy.Entry, 0, len(names))
		for _, n := range names {
			list = append(list, entries[n])
		}
		printJSON(stdout, list)
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "POLICY\tTITLE\tPATH\tSHA\tUPDATED")
		for _, n := range names {
			e := entries[n]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.PolicyName, e.Title, e.Path, short(e.SHA), e.LastUpdated)
		}
		_ = tw.Flush()
		fmt.Fprintf(stdout, "%d policies\n", len(names))
	}
	for key, perr := range problems {
		fmt.Fprintf(stderr, "syncjob: list: %s unreadable: %v\n", key, perr)
	}
	return nil
}
