package policy

import "regexp"

// ConfigError names the setting that is wrong: the command line exits 2 on
// it, and the Lambda handler reports its type and message.
type ConfigError struct {
	Setting string // the environment variable name
	Problem string
}

func (e *ConfigError) Error() string { return "config: " + e.Setting + ": " + e.Problem }

var repoPattern = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$`)

// IsRepo reports whether s names a GitHub repository as owner/name.
func IsRepo(s string) bool { return repoPattern.MatchString(s) }
