package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/knue/syncjob/internal/registry"
)

// queueCommand is "syncjob queue list": the queue entries, retries waiting
// and work for the re-indexer.
type queueCommand struct{ p *program }

func (c *queueCommand) Run(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "list" {
		return needsSubcommand("queue", "list")
	}
	fs := c.p.flagSet("queue list")
	asJSON := fs.Bool("json", false, "print JSON")
	cfg, err := c.p.parse(fs, "queue", args[1:])
	if err != nil {
		return err
	}
	_, reg, closeReg, err := c.p.open(cfg)
	if err != nil {
		return err
	}
	defer closeReg()
	return cfg.redact(queueList(ctx, reg, *asJSON, c.p.stdout, c.p.stderr))
}

func queueList(ctx context.Context, reg *registry.Registry, asJSON bool, stdout, stderr io.Writer) error {
	q, err := reg.Queue(ctx)
	if err != nil && q == nil {
		return fmt.Errorf("queue list: %w", err)
	}
	entries := sortedValues(q)
	if asJSON {
		printJSON(stdout, entries)
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tOPERATION\tSHA\tRETRIES\tCREATED\tERROR")
	for _, e := range entries {
		msg := ""
		if e.ErrorMessage != nil {
			msg = *e.ErrorMessage
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", e.PolicyName, e.Operation, short(e.SHA), e.RetryCount, e.CreatedAt, msg)
	}
	_ = tw.Flush()
	fmt.Fprintf(stdout, "%d entries\n", len(entries))
	if err != nil {
		// the entries that could be read are shown; say which could not
		fmt.Fprintln(stderr, "syncjob: queue list:", err)
	}
	return nil
}

// needsSubcommand is the usage error of a command run without one of its
// subcommands.
func needsSubcommand(cmd, subs string) error {
	return &exitError{exitUsage, fmt.Errorf("%s needs one of: %s\n\n%s", cmd, subs, strings.TrimSuffix(usage, "\n"))}
}
