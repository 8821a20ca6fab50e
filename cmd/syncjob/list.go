package main

import (
	"context"
	"fmt"
	"io"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// listCommand is "syncjob list": the registry's policies.
type listCommand struct{ p *program }

var listHelp = help{
	name:   "list",
	usage:  "list [--json] [settings]",
	about:  "Prints the registry's policies. Reads the registry only: it works while a sync runs.",
	groups: groupRegistry | groupLogging,
}

func (c *listCommand) Run(ctx context.Context, args []string) error {
	return listing(ctx, c.p, listHelp, args, func(ctx context.Context, reg *registry.Registry) ([]policy.Entry, error) {
		entries, problems, err := reg.Policies(ctx)
		if err != nil {
			return nil, err
		}
		list := sortedValues(entries)
		if len(problems) > 0 {
			return list, &registry.DecodeError{Problems: problems}
		}
		return list, nil
	}, printPolicies)
}

// printPolicies prints the policies as a table and their count.
func printPolicies(w io.Writer, list []policy.Entry) {
	t := &table{}
	t.add("POLICY", "TITLE", "PATH", "SHA", "UPDATED")
	for _, e := range list {
		t.add(e.PolicyName, e.Title, e.Path, short(e.SHA), e.LastUpdated)
	}
	t.write(w, "", palette{})
	fmt.Fprintln(w, count(len(list), "policy", "policies"))
}
