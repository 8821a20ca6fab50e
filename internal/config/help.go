package config

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// PrintFlags prints a command's own flags (own, in that order), then the
// settings of fs, each with the kind of value it takes; a secret's value
// never shows (StringFlag).
func PrintFlags(w io.Writer, fs *flag.FlagSet, own []string) {
	isOwn := map[string]bool{}
	for _, name := range own {
		isOwn[name] = true
	}
	if len(own) > 0 {
		fmt.Fprintln(w, "\nFlags:")
		for _, name := range own {
			printFlag(w, fs.Lookup(name))
		}
	}
	var bound []*flag.Flag
	for _, s := range Settings() {
		if f := fs.Lookup(s.Flag); f != nil && !isOwn[s.Flag] {
			bound = append(bound, f)
		}
	}
	if len(bound) > 0 {
		fmt.Fprintln(w, "\nSettings (each a flag and an environment variable; the flag wins):")
		for _, f := range bound {
			printFlag(w, f)
		}
	}
}

// printFlag prints f: its name and kind, then its usage and default.
func printFlag(w io.Writer, f *flag.Flag) {
	kind, usage := flag.UnquoteUsage(f)
	if sf, ok := f.Value.(*StringFlag); ok {
		kind = sf.Kind
	}
	line := "  -" + f.Name
	if kind != "" {
		line += " " + kind
	}
	if _, ok := f.Value.(*StringFlag); !ok && f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
		usage += " (default " + f.DefValue + ")"
	}
	fmt.Fprintf(w, "%s\n    \t%s\n", line, strings.ReplaceAll(usage, "\n", "\n    \t"))
}
