package main

import (
	"context"
	"fmt"
	"io"

	"github.com/knue/syncjob/internal/policy"
)

const queueUsage = `Usage: syncjob queue list [--json] [settings]

The queue entries: what the re-indexer has to pick up, and the failed writes
that the next sync retries (after 3 tries an entry becomes a dead letter:
syncjob deadletter).

Subcommands:
  list    print the queue entries

Run "syncjob queue list --help" for its flags and settings.
`

// queueListCommand is "syncjob queue list".
type queueListCommand struct{ p *program }

var queueListHelp = help{
	name:   "queue list",
	usage:  "queue list [--json] [settings]",
	about:  "Prints the queue entries by policy name. Reads the registry only: it works while a sync runs.",
	groups: groupRegistry | groupLogging,
}

func (c *queueListCommand) Run(ctx context.Context, args []string) error {
	fs := c.p.flagSet("queue list")
	asJSON := fs.Bool("json", false, "print JSON")
	cfg, _, err := c.p.parse(fs, queueListHelp, args)
	if err != nil {
		return err
	}
	_, reg, closeReg, err := c.p.open(cfg, readAccess)
	if err != nil {
		return err
	}
	defer closeReg()
	q, err := reg.Queue(ctx)
	if err != nil && q == nil {
		return cfg.redact(fmt.Errorf("queue list: %w", err))
	}
	entries := sortedValues(q)
	if *asJSON {
		printJSON(c.p.stdout, entries)
	} else {
		printQueue(c.p.stdout, entries)
	}
	if err != nil {
		// the entries that could be read are shown; say which could not
		fmt.Fprintln(c.p.stderr, "syncjob: queue list:", cfg.redact(err))
	}
	return nil
}

func printQueue(w io.Writer, entries []policy.QueueEntry) {
	t := &table{}
	t.add("POLICY", "OPERATION", "SHA", "RETRIES", "CREATED", "ERROR")
	for _, e := range entries {
		msg := ""
		if e.ErrorMessage != nil {
			msg = *e.ErrorMessage
		}
		t.add(e.PolicyName, e.Operation, short(e.SHA), fmt.Sprint(e.RetryCount), e.CreatedAt, msg)
	}
	t.write(w, "", palette{})
	fmt.Fprintf(w, "%d entries\n", len(entries))
}
