package main

import (
	"context"

	"github.com/knue/syncjob/internal/config"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/report"
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
	groups: config.Registry | config.Logging,
}

func (c *queueListCommand) Run(ctx context.Context, args []string) error {
	return listing(ctx, c.p, queueListHelp, args, func(ctx context.Context, reg *registry.Registry) ([]policy.QueueEntry, error) {
		q, err := reg.Queue(ctx)
		if q == nil {
			return nil, err
		}
		return report.SortedValues(q), err
	}, report.Queue)
}
