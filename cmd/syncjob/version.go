package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
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
	fmt.Fprintln(c.p.stdout, versionLine(info, ok))
	return nil
}

// versionLine is "syncjob VERSION (revision REV, TIME[, modified]; goX)".
func versionLine(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "syncjob (no build information; " + runtime.Version() + ")"
	}
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var rev, at string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	source := "revision unknown (built without VCS information)"
	if rev != "" {
		source = "revision " + rev
		if at != "" {
			source += ", " + at
		}
		if modified {
			source += ", modified"
		}
	}
	goVersion := info.GoVersion
	if goVersion == "" {
		goVersion = runtime.Version()
	}
	return fmt.Sprintf("syncjob %s (%s; %s)", version, source, goVersion)
}
