package config

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/redact"
)

// BoolForms are the accepted spellings of a yes/no setting, as an error
// message lists them.
const BoolForms = "1, true, t, yes, y, on or 0, false, f, no, n, off (any case)"

// ParseBool reads a yes/no value in any of its usual spellings; anything
// else is an error, never a silent false.
func ParseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "t", "yes", "y", "on":
		return true, nil
	case "0", "false", "f", "no", "n", "off":
		return false, nil
	}
	return false, fmt.Errorf("%s is not one of %s", redact.Quote(v), BoolForms)
}

// BoolFlag is a flag.Value for a yes/no flag that takes the spellings of
// ParseBool ("--json=yes" as well as "--json").
type BoolFlag struct{ P *bool }

func (b BoolFlag) IsBoolFlag() bool { return true }

func (b BoolFlag) String() string {
	if b.P == nil {
		return "false"
	}
	return strconv.FormatBool(*b.P)
}

func (b BoolFlag) Set(v string) error {
	x, err := ParseBool(v)
	if err != nil {
		return err
	}
	*b.P = x
	return nil
}

// BoolVar defines a yes/no flag, false by default.
func BoolVar(fs *flag.FlagSet, name, usage string) *bool {
	p := new(bool)
	fs.Var(BoolFlag{p}, name, usage)
	return p
}

// EnvBool reads the yes/no setting env: false when unset, else as
// ParseBool reads it; a value it does not read is a ConfigError naming env.
func EnvBool(getenv func(string) string, name string) (bool, error) {
	v := getenv(name)
	if strings.TrimSpace(v) == "" {
		return false, nil
	}
	b, err := ParseBool(v)
	if err != nil {
		return false, &policy.ConfigError{Setting: name, Problem: err.Error()}
	}
	return b, nil
}

// IsSet reports whether the flag name was given on the command line.
func IsSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
