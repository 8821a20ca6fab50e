package main

import (
	"flag"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/knue/syncjob/internal/policy"
)

// Config is every setting of syncjob. Each one is an environment variable
// and a flag; the flag wins.
type Config struct {
	Repo              string
	Branch            string
	GitHubToken       string
	GitHubAPIURL      string
	RegistryPath      string
	CFAccountID       string
	CFNamespaceID     string
	CFAPIToken        string
	CFAPIURL          string
	MaxFileSize       int64
	BatchSize         int
	Concurrency       int
	ReconcileInterval time.Duration
	DailyWriteBudget  int64
	LogFormat         string
	LogLevel          string
}

// setting describes one Config field for env, flags and --help.
type setting struct {
	env, flag, def, help string
	set                  func(c *Config, v string) error
}

func settings() []setting {
	str := func(f func(*Config) *string) func(*Config, string) error {
		return func(c *Config, v string) error { *f(c) = v; return nil }
	}
	return []setting{
		{env: "GITHUB_REPO", flag: "repo", help: "GitHub repository, owner/name (required)", set: str(func(c *Config) *string { return &c.Repo })},
		{env: "GITHUB_BRANCH", flag: "branch", def: "main", help: "branch to sync", set: str(func(c *Config) *string { return &c.Branch })},
		{env: "GITHUB_TOKEN", flag: "github-token", help: "GitHub token (optional; raises the rate limit from 60 to 5,000 requests an hour)", set: str(func(c *Config) *string { return &c.GitHubToken })},
		{env: "GITHUB_API_URL", flag: "github-api-url", def: "https://api.github.com/", help: "GitHub REST API base URL (GitHub Enterprise, tests)", set: str(func(c *Config) *string { return &c.GitHubAPIURL })},
		{env: "REGISTRY_PATH", flag: "registry-path", def: "./policy-registry.db", help: "embedded registry file (used when Cloudflare is not configured)", set: str(func(c *Config) *string { return &c.RegistryPath })},
		{env: "CLOUDFLARE_ACCOUNT_ID", flag: "cloudflare-account-id", help: "Cloudflare account id (with the namespace and token: use Workers KV)", set: str(func(c *Config) *string { return &c.CFAccountID })},
		{env: "CLOUDFLARE_KV_NAMESPACE_ID", flag: "cloudflare-kv-namespace-id", help: "Workers KV namespace id", set: str(func(c *Config) *string { return &c.CFNamespaceID })},
		{env: "CLOUDFLARE_API_TOKEN", flag: "cloudflare-api-token", help: "Cloudflare API token", set: str(func(c *Config) *string { return &c.CFAPIToken })},
		{env: "CLOUDFLARE_API_URL", flag: "cloudflare-api-url", def: "https://api.cloudflare.com/client/v4", help: "Cloudflare API base URL", set: str(func(c *Config) *string { return &c.CFAPIURL })},
		{env: "MAX_FILE_SIZE", flag: "max-file-size", def: strconv.Itoa(policy.DefaultMaxFileSize), help: "bytes; larger policy files are skipped and their entries kept", set: func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			c.MaxFileSize = n
			return err
		}},
		{env: "BATCH_SIZE", flag: "batch-size", def: "50", help: "registry writes per batch, one bulk request each on Cloudflare (1-10000; a body over 100 MB is split)", set: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			c.BatchSize = n
			return err
		}},
		{env: "CONCURRENCY", flag: "concurrency", def: "4", help: "batches written at once (1-32)", set: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			c.Concurrency = n
			return err
		}},
		{env: "RECONCILE_INTERVAL", flag: "reconcile-interval", def: "168h", help: "a full run happens when the last one is older than this", set: func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			c.ReconcileInterval = d
			return err
		}},
		{env: "DAILY_WRITE_BUDGET", flag: "daily-write-budget", def: "0", help: "billable Cloudflare writes a UTC day may spend; a run that would exceed it stops before writing (0: no budget; the free plan has 1000)", set: func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			c.DailyWriteBudget = n
			return err
		}},
		{env: "LOG_FORMAT", flag: "log-format", def: "auto", help: "auto (text on a terminal, JSON otherwise), json or text", set: str(func(c *Config) *string { return &c.LogFormat })},
		{env: "LOG_LEVEL", flag: "log-level", def: "info", help: "debug, info, warn or error", set: str(func(c *Config) *string { return &c.LogLevel })},
	}
}

// ConfigError names the setting that is wrong. It means exit code 2.
type ConfigError struct {
	Setting string // the environment variable name
	Problem string
}

func (e *ConfigError) Error() string { return "config: " + e.Setting + ": " + e.Problem }

// bindConfig registers every setting as a flag on fs, with env values as defaults.
// The returned function completes the Config after fs.Parse.
func bindConfig(fs *flag.FlagSet, env func(string) string) func() (Config, error) {
	var c Config
	type bound struct {
		s   setting
		val *string
	}
	var all []bound
	for _, s := range settings() {
		v := s.def
		if e := env(s.env); e != "" {
			v = e
		}
		help := fmt.Sprintf("%s (env %s", s.help, s.env)
		if s.def != "" {
			help += ", default " + s.def
		}
		help += ")"
		p := new(string)
		fs.Var(&stringFlag{p: p}, s.flag, help)
		*p = v
		all = append(all, bound{s, p})
	}
	return func() (Config, error) {
		for _, b := range all {
			if err := b.s.set(&c, strings.TrimSpace(*b.val)); err != nil {
				return c, &ConfigError{Setting: b.s.env, Problem: fmt.Sprintf("invalid value %q", *b.val)}
			}
		}
		return c, c.Validate()
	}
}

// stringFlag is a plain string flag whose help shows no value.
type stringFlag struct{ p *string }

// String is empty: the usage text states each default itself, and a
// secret's value must never reach the help output.
func (f *stringFlag) String() string     { return "" }
func (f *stringFlag) Set(v string) error { *f.p = v; return nil }

// maxBatchSize is Cloudflare's bulk limit of pairs per request.
const maxBatchSize = 10000

var repoPattern = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$`)

// ValidateSource checks the GitHub settings, which only sync needs.
func (c Config) ValidateSource() error {
	switch {
	case c.Repo == "":
		return &ConfigError{"GITHUB_REPO", "required: the repository to sync, as owner/name"}
	case !repoPattern.MatchString(c.Repo):
		return &ConfigError{"GITHUB_REPO", fmt.Sprintf("%q is not owner/name", c.Repo)}
	case c.Branch == "":
		return &ConfigError{"GITHUB_BRANCH", "must not be empty"}
	}
	return checkURL("GITHUB_API_URL", c.GitHubAPIURL)
}

// Validate checks every setting but the GitHub ones and names the first one that is wrong.
func (c Config) Validate() error {
	cf := map[string]string{"CLOUDFLARE_ACCOUNT_ID": c.CFAccountID, "CLOUDFLARE_KV_NAMESPACE_ID": c.CFNamespaceID, "CLOUDFLARE_API_TOKEN": c.CFAPIToken}
	var set, unset []string
	for _, k := range []string{"CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_KV_NAMESPACE_ID", "CLOUDFLARE_API_TOKEN"} {
		if cf[k] == "" {
			unset = append(unset, k)
		} else {
			set = append(set, k)
		}
	}
	switch {
	case len(set) > 0 && len(unset) > 0:
		return &ConfigError{unset[0], fmt.Sprintf("missing while %s is set: set all three Cloudflare settings, or none to use REGISTRY_PATH", strings.Join(set, ", "))}
	case len(set) == 3:
		if err := checkURL("CLOUDFLARE_API_URL", c.CFAPIURL); err != nil {
			return err
		}
	}
	switch {
	case c.RegistryPath == "":
		return &ConfigError{"REGISTRY_PATH", "must not be empty"}
	case c.MaxFileSize < 1:
		return &ConfigError{"MAX_FILE_SIZE", "must be at least 1 byte"}
	case c.BatchSize < 1 || c.BatchSize > maxBatchSize:
		return &ConfigError{"BATCH_SIZE", fmt.Sprintf("%d is outside 1-%d", c.BatchSize, maxBatchSize)}
	case c.Concurrency < 1 || c.Concurrency > 32:
		return &ConfigError{"CONCURRENCY", fmt.Sprintf("%d is outside 1-32", c.Concurrency)}
	case c.DailyWriteBudget < 0:
		return &ConfigError{"DAILY_WRITE_BUDGET", "must not be negative (0: no budget)"}
	case c.ReconcileInterval < time.Hour:
		return &ConfigError{"RECONCILE_INTERVAL", "must be at least 1h"}
	case c.LogFormat != "auto" && c.LogFormat != "json" && c.LogFormat != "text":
		return &ConfigError{"LOG_FORMAT", fmt.Sprintf("%q is not auto, json or text", c.LogFormat)}
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return &ConfigError{"LOG_LEVEL", fmt.Sprintf("%q is not debug, info, warn or error", c.LogLevel)}
	}
	return nil
}

func checkURL(name, v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &ConfigError{name, fmt.Sprintf("%q is not an http(s) URL", v)}
	}
	return nil
}

// cloudflare reports whether the registry is Cloudflare Workers KV.
func (c Config) cloudflare() bool {
	return c.CFAccountID != "" && c.CFNamespaceID != "" && c.CFAPIToken != ""
}
