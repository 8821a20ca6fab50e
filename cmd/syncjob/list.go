package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// listCommand is "syncjob list": the registry's policies.
type listCommand struct{ p *program }

var listHelp = help{
	name:   "list",
	usage:  "list [--json] [settings]",
	about:  "Prints the registry's policies; a title that is the name is left blank, and a file named\n{POLICY}.md shows as its folder. Reads the registry only: it works while a sync runs.",
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

// printPolicies prints the policies as a table and their count. What
// would repeat the first column is left out, so that a row of typical
// Hangul names fits 120 columns: a title that is the name, and the file
// name of a path that is {POLICY}.md (its folder shows).
func printPolicies(w io.Writer, list []policy.Entry) {
	t := &table{}
	t.add("POLICY", "TITLE", "FOLDER OR PATH", "SHA", "UPDATED")
	for _, e := range list {
		title := e.Title
		if title == e.PolicyName {
			title = "" // it would repeat the first column
		}
		t.add(e.PolicyName, title, shortPath(e), short(e.SHA), e.LastUpdated)
	}
	t.write(w, "", palette{})
	fmt.Fprintln(w, count(len(list), "policy", "policies"))
}

// shortPath is e's folder ("규정/제1편/", "./" at the root) when its file
// is named for the policy, else its whole path.
func shortPath(e policy.Entry) string {
	if e.Path == "" || policy.NameOf(e.Path) != e.PolicyName {
		return e.Path
	}
	i := strings.LastIndexByte(e.Path, '/')
	if i < 0 {
		return "./"
	}
	return e.Path[:i+1]
}
