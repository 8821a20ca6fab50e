package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"

	"github.com/knue/syncjob/internal/config"
)

// help is what "syncjob CMD --help" says of a command, and which settings
// the command reads.
type help struct {
	name   string // "deadletter retry"
	usage  string // after "Usage: syncjob ", e.g. "deadletter retry NAME | --all"
	about  string
	groups config.Group
	args   int // how many arguments besides flags it takes
}

// flagSet returns the flag set of "syncjob NAME"; it prints nothing itself
// (parse says what went wrong).
func (p *program) flagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("syncjob "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse binds the settings that h's command reads to fs (its own flags
// bound already), parses args and returns the configuration and the
// arguments left. --help prints h and returns flag.ErrHelp; a wrong flag
// or argument is one line of usage error.
func (p *program) parse(fs *flag.FlagSet, h help, args []string) (config.Config, []string, error) {
	var own []string
	fs.VisitAll(func(f *flag.Flag) { own = append(own, f.Name) })
	load := config.Bind(fs, p.getenv, h.groups)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(p.stderr, h, fs, own)
			return config.Config{}, nil, err
		}
		return config.Config{}, nil, usageError(h.name, flagProblem(fs, err))
	}
	if fs.NArg() > h.args {
		return config.Config{}, nil, usageError(h.name, extraArgs(h, fs.Args()))
	}
	cfg, err := load()
	return cfg, fs.Args(), err
}

// parseName is parse for a command that takes one NAME, before its flags
// or after them. A NAME of several words is a usage error that suggests
// quotes: a shell splits an unquoted name with spaces, and acting on its
// first word alone would touch another policy.
func (p *program) parseName(fs *flag.FlagSet, h help, args []string) (config.Config, string, error) {
	var words []string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		words, args = args[:1], args[1:]
	}
	loose := h
	loose.args = len(args) // the words after NAME are counted with it, below
	cfg, rest, err := p.parse(fs, loose, args)
	if err != nil {
		return cfg, "", err
	}
	if words = append(words, rest...); len(words) > h.args {
		return cfg, "", usageError(h.name, extraArgs(h, words))
	}
	if len(words) == 0 {
		return cfg, "", nil
	}
	return cfg, words[0], nil
}

// extraArgs says what is wrong with args, more than h's command takes.
func extraArgs(h help, args []string) string {
	var words []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") { // a flag after the words is not parsed: not part of the name
			words = append(words, a)
		}
	}
	if h.args == 1 && len(words) > 1 {
		return fmt.Sprintf("takes one NAME, got %d words; quote a name with spaces: syncjob %s %q", len(words), h.name, strings.Join(words, " "))
	}
	return fmt.Sprintf("unexpected argument %q", args[h.args])
}

// usageError is a mistake in how a command was called: one line, and where
// to read how to call it. Exit code 2.
func usageError(cmd, problem string) error {
	see := "syncjob --help"
	if cmd != "" {
		see = "syncjob " + cmd + " --help"
		problem = cmd + ": " + problem
	}
	return &exitError{exitUsage, fmt.Errorf("%s; see %s", problem, see)}
}

// invalidFlagValue is compiled when first used, not when the program
// starts (docs/bench.md, "Round trips").
var invalidFlagValue = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^invalid (?:boolean )?value ("(?:[^"\\]|\\.)*") for (?:flag )?-([^:]+): `)
})

// flagProblem says in a few words what the flag package refused.
func flagProblem(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		return "unknown flag " + name
	}
	if m := invalidFlagValue().FindStringSubmatch(msg); m != nil {
		want := "valid value"
		if f := fs.Lookup(m[2]); f != nil {
			switch kind, _ := flag.UnquoteUsage(f); kind {
			case "":
				want = "yes/no value: " + config.BoolForms
				if _, ok := f.Value.(*config.MassDeleteFlag); ok {
					want = "count of policies or a yes/no value"
				}
			case "int", "uint":
				want = "whole number"
			case "duration":
				want = "duration such as 24h or 30m"
			}
		}
		return fmt.Sprintf("-%s: %s is not a %s", m[2], m[1], want)
	}
	return msg
}

// printHelp prints the usage of a command: its own flags, then the settings
// it reads, each with the kind of value it takes.
func printHelp(w io.Writer, h help, fs *flag.FlagSet, own []string) {
	fmt.Fprintf(w, "Usage: syncjob %s\n\n%s\n", h.usage, h.about)
	config.PrintFlags(w, fs, own)
}
