package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/knue/syncjob/internal/policy"
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
	fs := c.p.flagSet("list")
	asJSON := fs.Bool("json", false, "print JSON")
	cfg, _, err := c.p.parse(fs, listHelp, args)
	if err != nil {
		return err
	}
	_, reg, closeReg, err := c.p.open(cfg, readAccess)
	if err != nil {
		return err
	}
	defer closeReg()
	entries, problems, err := reg.Policies(ctx)
	if err != nil {
		return cfg.redact(fmt.Errorf("list: %w", err))
	}
	list := sortedValues(entries)
	if *asJSON {
		printJSON(c.p.stdout, list)
	} else {
		printPolicies(c.p.stdout, list)
	}
	for _, key := range slices.Sorted(maps.Keys(problems)) {
		fmt.Fprintf(c.p.stderr, "syncjob: list: %s unreadable: %v\n", key, cfg.redact(problems[key]))
	}
	return nil
}

// printPolicies prints the policies as a table and their count.
func printPolicies(w io.Writer, list []policy.Entry) {
	t := &table{}
	t.add("POLICY", "TITLE", "PATH", "SHA", "UPDATED")
	for _, e := range list {
		t.add(e.PolicyName, e.Title, e.Path, short(e.SHA), e.LastUpdated)
	}
	t.write(w, "", palette{})
	fmt.Fprintf(w, "%d policies\n", len(list))
}
