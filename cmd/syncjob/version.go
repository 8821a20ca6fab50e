package main

import (
	"context"
	"fmt"

	"github.com/knue/syncjob/internal/report"
)

// versionCommand is "syncjob version": which build this is.
type versionCommand struct{ p *program }

var versionHelp = help{
	name:  "version",
	usage: "version",
	about: "Prints the module version, the source revision it was built from and the Go version.",
}

func (c *versionCommand) Run(_ context.Context, args []string) error {
	fs := c.p.flagSet("version")
	if _, _, err := c.p.parse(fs, versionHelp, args); err != nil {
		return err
	}
	info, ok := c.p.buildInfo()
	fmt.Fprintln(c.p.stdout, report.Version(info, ok))
	return nil
}
