package main

import (
	"context"

	"github.com/knue/syncjob/internal/config"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/report"
)

// listCommand is "syncjob list": the registry's policies.
type listCommand struct{ p *program }

var listHelp = help{
	name:   "list",
	usage:  "list [--json] [settings]",
	about:  "Prints the registry's policies; a title that is the name is left blank, and a file named\n{POLICY}.md shows as its folder. Reads the registry only: it works while a sync runs.",
	groups: config.Registry | config.Logging,
}

func (c *listCommand) Run(ctx context.Context, args []string) error {
	return listing(ctx, c.p, listHelp, args, func(ctx context.Context, reg *registry.Registry) ([]policy.Entry, error) {
		entries, problems, err := reg.Policies(ctx)
		if err != nil {
			return nil, err
		}
		list := report.SortedValues(entries)
		if len(problems) > 0 {
			return list, &registry.DecodeError{Problems: problems}
		}
		return list, nil
	}, report.Policies)
}
