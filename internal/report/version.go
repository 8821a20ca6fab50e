package report

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is "syncjob VERSION (revision REV, TIME[, modified]; goX)".
func Version(info *debug.BuildInfo, ok bool) string {
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
