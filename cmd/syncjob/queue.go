package main

import (
	"context"
	"fmt"
	"io"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
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
	return listing(ctx, c.p, queueListHelp, args, func(ctx context.Context, reg *registry.Registry) ([]policy.QueueEntry, error) {
		q, err := reg.Queue(ctx)
		if q == nil {
			return nil, err
		}
		return sortedValues(q), err
	}, printQueue)
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
	fmt.Fprintln(w, count(len(entries), "entry", "entries"))
}
