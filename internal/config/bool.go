package main

import (
	"flag"
	"fmt"
	"github.com/knue/syncjob/internal/policy"
	"strconv"
	"strings"
)

// boolForms are the accepted spellings of a yes/no setting, as an error
// message lists them.
const boolForms = "1, true, t, yes, y, on or 0, false, f, no, n, off (any case)"

// parseBool reads a yes/no value in any of its usual spellings; anything
// else is an error, never a silent false.
func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "t", "yes", "y", "on":
		return true, nil
	case "0", "false", "f", "no", "n", "off":
		return false, nil
	}
	return false, fmt.Errorf("%q is not one of %s", v, boolForms)
}

// boolFlag is a flag.Value for a yes/no flag that takes the spellings of
// parseBool ("--json=yes" as well as "--json").
type boolFlag struct{ p *bool }

func (b boolFlag) IsBoolFlag() bool { return true }

func (b boolFlag) String() string {
	if b.p == nil {
		return "false"
	}
	return strconv.FormatBool(*b.p)
}

func (b boolFlag) Set(v string) error {
	x, err := parseBool(v)
	if err != nil {
		return err
	}
	*b.p = x
	return nil
}

// boolVar defines a yes/no flag, false by default.
func boolVar(fs *flag.FlagSet, name, usage string) *bool {
	p := new(bool)
	fs.Var(boolFlag{p}, name, usage)
	return p
}

// envBool reads the yes/no setting env: false when unset, else as
// parseBool reads it; a value it does not read is a ConfigError naming env.
func envBool(getenv env, name string) (bool, error) {
	v := getenv(name)
	if strings.TrimSpace(v) == "" {
		return false, nil
	}
	b, err := parseBool(v)
	if err != nil {
		return false, &policy.ConfigError{Setting: name, Problem: err.Error()}
	}
	return b, nil
}

// isSet reports whether the flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
