package policy

import "strings"

// ConfigError names the setting that is wrong: the command line exits 2 on
// it, and the Lambda handler reports its type and message.
type ConfigError struct {
	Setting string // the environment variable name
	Problem string
}

func (e *ConfigError) Error() string { return "config: " + e.Setting + ": " + e.Problem }

// IsRepo reports whether s names a GitHub repository as owner/name: an
// owner of 1 to 39 letters, digits and hyphens that starts with a letter
// or digit, and a name of 1 to 100 letters, digits, dots, hyphens and
// underscores. Checked by hand, not by a regular expression compiled when
// the program starts: its counted repeats made it the costliest package
// initialisation of ours (docs/bench.md, "Round trips").
func IsRepo(s string) bool {
	owner, name, ok := strings.Cut(s, "/")
	if !ok || len(owner) < 1 || len(owner) > 39 || len(name) < 1 || len(name) > 100 || !alnum(owner[0]) {
		return false
	}
	for i := 1; i < len(owner); i++ {
		if !alnum(owner[i]) && owner[i] != '-' {
			return false
		}
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !alnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// alnum reports whether c is an ASCII letter or digit.
func alnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
