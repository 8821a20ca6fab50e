package main

import (
	"flag"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/redact"
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
	MaxDelete         int // the mass-delete guard refuses a plan that loses more than
	MaxDeletePercent  int // MaxDelete policies and more than MaxDeletePercent of the registry
	LogFormat         string
	LogLevel          string
	StatusMaxAge      time.Duration
	Content           mirror.Config // CONTENT_*: the content mirror, off unless CONTENT_DIR or CONTENT_BUCKET is set
}

// group is a set of settings that commands read together: each command
// binds (and its --help lists) only the groups it reads.
type group uint8

const (
	groupSource   group = 1 << iota // the GitHub repository
	groupRegistry                   // where the registry is
	groupRun                        // how a run writes
	groupLogging
	groupHealth // what status --check calls healthy
	// groupLabel is the repository and branch alone, which status shows
	// (in place of those the last run recorded, when set).
	groupLabel
	groupMirror // the content mirror (CONTENT_*)
)

// setting describes one Config field for env, flags and --help.
type setting struct {
	env, flag, def, help string
	kind                 string // what the value is, shown in --help: "owner/name", "duration", ...
	group                group
	required             bool                            // by the commands that read the source (sync)
	set                  func(c *Config, v string) error // its error says what the value should be
}

func settings() []setting {
	str := func(f func(*Config) *string) func(*Config, string) error {
		return func(c *Config, v string) error { *f(c) = v; return nil }
	}
	return []setting{
		{env: "GITHUB_REPO", flag: "repo", kind: "owner/name", group: groupSource | groupLabel, required: true, help: "GitHub repository", set: str(func(c *Config) *string { return &c.Repo })},
		{env: "GITHUB_BRANCH", flag: "branch", kind: "name", group: groupSource | groupLabel, def: "main", help: "branch to sync", set: str(func(c *Config) *string { return &c.Branch })},
		{env: "GITHUB_TOKEN", flag: "github-token", kind: "token", group: groupSource, help: "GitHub token (optional; raises the rate limit from 60 to 5,000 requests an hour)", set: str(func(c *Config) *string { return &c.GitHubToken })},
		{env: "GITHUB_API_URL", flag: "github-api-url", kind: "URL", group: groupSource, def: "https://api.github.com/", help: "GitHub REST API base URL (GitHub Enterprise, tests)", set: str(func(c *Config) *string { return &c.GitHubAPIURL })},
		{env: "REGISTRY_PATH", flag: "registry-path", kind: "path", group: groupRegistry, def: "./policy-registry.db", help: "embedded registry file (used when Cloudflare is not configured)", set: str(func(c *Config) *string { return &c.RegistryPath })},
		{env: "CLOUDFLARE_ACCOUNT_ID", flag: "cloudflare-account-id", kind: "id", group: groupRegistry, help: "Cloudflare account id (with the namespace and token: use Workers KV)", set: str(func(c *Config) *string { return &c.CFAccountID })},
		{env: "CLOUDFLARE_KV_NAMESPACE_ID", flag: "cloudflare-kv-namespace-id", kind: "id", group: groupRegistry, help: "Workers KV namespace id", set: str(func(c *Config) *string { return &c.CFNamespaceID })},
		{env: "CLOUDFLARE_API_TOKEN", flag: "cloudflare-api-token", kind: "token", group: groupRegistry, help: "Cloudflare API token", set: str(func(c *Config) *string { return &c.CFAPIToken })},
		{env: "CLOUDFLARE_API_URL", flag: "cloudflare-api-url", kind: "URL", group: groupRegistry, def: "https://api.cloudflare.com/client/v4", help: "Cloudflare API base URL", set: str(func(c *Config) *string { return &c.CFAPIURL })},
		{env: "CONTENT_DIR", flag: "content-dir", kind: "path", group: groupMirror, help: "content mirror in a local folder: {dir}/{prefix}{policyName}/policy.md", set: str(func(c *Config) *string { return &c.Content.Dir })},
		{env: "CONTENT_BUCKET", flag: "content-bucket", kind: "name", group: groupMirror, help: "content mirror in this S3-compatible bucket (Cloudflare R2)", set: str(func(c *Config) *string { return &c.Content.Bucket })},
		{env: "CONTENT_ENDPOINT", flag: "content-endpoint", kind: "URL", group: groupMirror, help: "the bucket's S3 endpoint, R2: https://ACCOUNT.r2.cloudflarestorage.com (empty: AWS S3)", set: str(func(c *Config) *string { return &c.Content.Endpoint })},
		{env: "CONTENT_REGION", flag: "content-region", kind: "region", group: groupMirror, def: mirror.DefaultRegion, help: "the bucket's region (R2: auto)", set: str(func(c *Config) *string { return &c.Content.Region })},
		{env: "CONTENT_ACCESS_KEY_ID", flag: "content-access-key-id", kind: "id", group: groupMirror, help: "S3 access key id of the bucket (with the secret, or neither for AWS's default credential chain)", set: str(func(c *Config) *string { return &c.Content.AccessKeyID })},
		{env: "CONTENT_SECRET_ACCESS_KEY", flag: "content-secret-access-key", kind: "token", group: groupMirror, help: "S3 secret access key of the bucket", set: str(func(c *Config) *string { return &c.Content.SecretAccessKey })},
		{env: "CONTENT_PREFIX", flag: "content-prefix", kind: "prefix", group: groupMirror, def: mirror.DefaultPrefix, help: "key prefix of the mirror's objects; nothing outside it is touched", set: str(func(c *Config) *string { return &c.Content.Prefix })},
		{env: "MAX_FILE_SIZE", flag: "max-file-size", kind: "bytes", group: groupRun, def: strconv.Itoa(policy.DefaultMaxFileSize), help: "larger policy files are skipped and their entries kept", set: func(c *Config, v string) error {
			return parseInt(v, &c.MaxFileSize)
		}},
		{env: "BATCH_SIZE", flag: "batch-size", kind: "int", group: groupRun, def: "50", help: "registry writes per batch, one bulk request each on Cloudflare (1-50)", set: func(c *Config, v string) error {
			return parseInt(v, &c.BatchSize)
		}},
		{env: "CONCURRENCY", flag: "concurrency", kind: "int", group: groupRun, def: "16", help: "batches written at once (1-32; 16 keeps a first sync within 1.3x of the fewest requests possible, docs/bench.md)", set: func(c *Config, v string) error {
			return parseInt(v, &c.Concurrency)
		}},
		{env: "RECONCILE_INTERVAL", flag: "reconcile-interval", kind: "duration", group: groupRun, def: "24h", help: "a scheduled (or CLI) run is full when the last full run is older than this, less an hour's slack: the daily run reconciles", set: func(c *Config, v string) error {
			return parseDuration(v, &c.ReconcileInterval)
		}},
		{env: "DAILY_WRITE_BUDGET", flag: "daily-write-budget", kind: "int", group: groupRun, def: "0", help: "billable Cloudflare writes a UTC day may spend; a run applies what fits, in a stable order, and the next runs continue (0: no budget; the free plan has 1000)", set: func(c *Config, v string) error {
			return parseInt(v, &c.DailyWriteBudget)
		}},
		{env: "MAX_DELETE", flag: "max-delete", kind: "count", group: groupRun, def: strconv.Itoa(differ.DefaultLimit.Count), help: "the mass-delete guard refuses a plan that loses more than this many policies and more than MAX_DELETE_PERCENT of the registry (content kept under another name is not lost)", set: func(c *Config, v string) error {
			return parseInt(v, &c.MaxDelete)
		}},
		{env: "MAX_DELETE_PERCENT", flag: "max-delete-percent", kind: "percent", group: groupRun, def: strconv.Itoa(differ.DefaultLimit.Percent), help: "see MAX_DELETE: the share of the registry, 0-100, with or without %", set: func(c *Config, v string) error {
			return parseInt(strings.TrimSuffix(v, "%"), &c.MaxDeletePercent)
		}},
		{env: "LOG_FORMAT", flag: "log-format", kind: "auto|json|text", group: groupLogging, def: "auto", help: "auto: text on a terminal, JSON otherwise", set: str(func(c *Config) *string { return &c.LogFormat })},
		{env: "LOG_LEVEL", flag: "log-level", kind: "debug|info|warn|error", group: groupLogging, def: "info", help: "the least severe lines logged", set: str(func(c *Config) *string { return &c.LogLevel })},
		{env: "STATUS_MAX_AGE", flag: "max-age", kind: "duration", group: groupHealth, def: defaultMaxAge, help: "status --check: the last success must be younger than this (the daily schedule and 2 hours' slack, as the NoSuccess alarm)", set: func(c *Config, v string) error {
			return parseDuration(v, &c.StatusMaxAge)
		}},
	}
}

// defaultMaxAge is the health check's default: a daily run and 2 hours for
// it to be late, run long or be retried.
const defaultMaxAge = "26h"

func parseInt[T int | int64](v string, p *T) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return fmt.Errorf("%q is not a whole number", v)
	}
	*p = T(n)
	return nil
}

func parseDuration(v string, p *time.Duration) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%q is not a duration such as 24h or 30m", v)
	}
	*p = d
	return nil
}

// bindConfig registers the settings of groups as flags on fs, with env
// values as defaults; every other setting keeps its default, whatever the
// environment says (a command does not read it). The returned function
// completes the Config after fs.Parse.
func bindConfig(fs *flag.FlagSet, env func(string) string, groups group) func() (Config, error) {
	type bound struct {
		s   setting
		val *string
	}
	var all []bound
	for _, s := range settings() {
		v := s.def
		if s.group&groups == 0 {
			all = append(all, bound{s, &v})
			continue
		}
		if e := env(s.env); e != "" {
			v = e
		}
		help := fmt.Sprintf("%s (env %s", s.help, s.env)
		if s.def != "" {
			help += ", default " + s.def
		}
		if s.required && groups&groupSource != 0 {
			help += ", required"
		}
		help += ")"
		p := new(string)
		fs.Var(&stringFlag{p: p, kind: s.kind}, s.flag, help)
		*p = v
		all = append(all, bound{s, p})
	}
	return func() (Config, error) {
		var c Config
		for _, b := range all {
			if err := b.s.set(&c, strings.TrimSpace(*b.val)); err != nil {
				return c, &policy.ConfigError{Setting: b.s.env, Problem: err.Error()}
			}
		}
		return c, c.Validate()
	}
}

// stringFlag is a plain string flag whose help shows its kind, not its value.
type stringFlag struct {
	p    *string
	kind string
}

// String is empty: the usage text states each default itself, and a
// secret's value must never reach the help output.
func (f *stringFlag) String() string     { return "" }
func (f *stringFlag) Set(v string) error { *f.p = v; return nil }

// maxBatchSize bounds a batch: a run applies at most 50 operations a
// request, so that one refused request costs little and the writes of a
// large run spread over Cloudflare's rate window.
const maxBatchSize = 50

// ValidateSource checks the GitHub settings, which only sync needs.
func (c Config) ValidateSource() error {
	switch {
	case c.Repo == "":
		return &policy.ConfigError{Setting: "GITHUB_REPO", Problem: "required: the repository to sync, as owner/name"}
	case !policy.IsRepo(c.Repo):
		return &policy.ConfigError{Setting: "GITHUB_REPO", Problem: fmt.Sprintf("%q is not owner/name", c.Repo)}
	case c.Branch == "":
		return &policy.ConfigError{Setting: "GITHUB_BRANCH", Problem: "must not be empty"}
	}
	if err := checkToken("GITHUB_TOKEN", c.GitHubToken); err != nil {
		return err
	}
	return checkURL("GITHUB_API_URL", "GITHUB_TOKEN", c.GitHubAPIURL)
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
		return &policy.ConfigError{Setting: unset[0], Problem: fmt.Sprintf("missing while %s is set: set all three Cloudflare settings, or none to use REGISTRY_PATH", strings.Join(set, ", "))}
	case len(set) == 3:
		if err := checkToken("CLOUDFLARE_API_TOKEN", c.CFAPIToken); err != nil {
			return err
		}
		if err := checkURL("CLOUDFLARE_API_URL", "CLOUDFLARE_API_TOKEN", c.CFAPIURL); err != nil {
			return err
		}
	}
	switch {
	case c.RegistryPath == "":
		return &policy.ConfigError{Setting: "REGISTRY_PATH", Problem: "must not be empty"}
	case c.MaxFileSize < 1:
		return &policy.ConfigError{Setting: "MAX_FILE_SIZE", Problem: "must be at least 1 byte"}
	case c.BatchSize < 1 || c.BatchSize > maxBatchSize:
		return &policy.ConfigError{Setting: "BATCH_SIZE", Problem: fmt.Sprintf("%d is outside 1-%d", c.BatchSize, maxBatchSize)}
	case c.Concurrency < 1 || c.Concurrency > 32:
		return &policy.ConfigError{Setting: "CONCURRENCY", Problem: fmt.Sprintf("%d is outside 1-32", c.Concurrency)}
	case c.DailyWriteBudget < 0:
		return &policy.ConfigError{Setting: "DAILY_WRITE_BUDGET", Problem: "must not be negative (0: no budget)"}
	case c.MaxDelete < 0:
		return &policy.ConfigError{Setting: "MAX_DELETE", Problem: fmt.Sprintf("%d is negative: give how many policies a plan may lose", c.MaxDelete)}
	case c.MaxDeletePercent < 0 || c.MaxDeletePercent > 100:
		return &policy.ConfigError{Setting: "MAX_DELETE_PERCENT", Problem: fmt.Sprintf("%d is outside 0-100", c.MaxDeletePercent)}
	case c.ReconcileInterval < time.Hour:
		return &policy.ConfigError{Setting: "RECONCILE_INTERVAL", Problem: "must be at least 1h"}
	case c.StatusMaxAge < time.Minute:
		return &policy.ConfigError{Setting: "STATUS_MAX_AGE", Problem: "must be at least 1m"}
	case c.LogFormat != "auto" && c.LogFormat != "json" && c.LogFormat != "text":
		return &policy.ConfigError{Setting: "LOG_FORMAT", Problem: fmt.Sprintf("%q is not auto, json or text", c.LogFormat)}
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return &policy.ConfigError{Setting: "LOG_LEVEL", Problem: fmt.Sprintf("%q is not debug, info, warn or error", c.LogLevel)}
	}
	return c.validateContent()
}

// contentSetting finds the setting a mirror.Config.Validate error names.
var contentSetting = regexp.MustCompile(`CONTENT_[A-Z_]+`)

// validateContent checks the CONTENT_* settings with mirror.Config.Validate
// and names the first setting it blames. The secret key is never shown.
func (c Config) validateContent() error {
	if err := c.mirrorConfig().Validate(); err != nil {
		setting := contentSetting.FindString(err.Error())
		if setting == "" {
			setting = "CONTENT_DIR"
		}
		problem := strings.TrimPrefix(strings.TrimSuffix(err.Error(), ": "+policy.ErrConfig.Error()), "mirror: ")
		return &policy.ConfigError{Setting: setting, Problem: redact.String(problem, c.Content.SecretAccessKey)}
	}
	if err := checkToken("CONTENT_SECRET_ACCESS_KEY", c.Content.SecretAccessKey); err != nil {
		return err
	}
	return nil
}

// mirrorConfig is the mirror's configuration: the CONTENT_* settings, the
// bucket-only ones (the region's default among them) dropped when no
// bucket is set, so a folder mirror or none is not refused for them.
func (c Config) mirrorConfig() mirror.Config {
	m := c.Content
	if m.Bucket == "" && m.Region == mirror.DefaultRegion {
		m.Region = ""
	}
	return m
}

// checkToken refuses a token too short to be one (GitHub's and
// Cloudflare's have 40 characters or more): a mistake, and one that could
// not be masked wherever it appears in a line (redact.MinSecretLen).
// The token is not shown.
func checkToken(name, v string) error {
	if v != "" && len(v) < redact.MinSecretLen {
		return &policy.ConfigError{Setting: name, Problem: fmt.Sprintf("is %d characters long: too short to be a token (at least %d; GitHub's and Cloudflare's have 40 or more)", len(v), redact.MinSecretLen)}
	}
	return nil
}

// checkURL checks the API base URL of setting name. Credentials written
// into it (https://user:secret@host/) are refused without being shown: a
// client would send them as Basic auth instead of the token (tokenSetting),
// and a server echoing them would put them into output and records.
func checkURL(name, tokenSetting, v string) error {
	u, err := url.Parse(v)
	switch {
	case err != nil:
		return &policy.ConfigError{Setting: name, Problem: "is not an http(s) URL (it does not parse)"}
	case u.User != nil:
		return &policy.ConfigError{Setting: name, Problem: fmt.Sprintf("must not hold credentials (user:password@ before the host): give the address only, as %s, and the token in %s",
			redact.URL(u), tokenSetting)}
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return &policy.ConfigError{Setting: name, Problem: fmt.Sprintf("%q is not an http(s) URL", redact.URL(u))}
	}
	return nil
}

// cloudflare reports whether the registry is Cloudflare Workers KV.
func (c Config) cloudflare() bool {
	return c.CFAccountID != "" && c.CFNamespaceID != "" && c.CFAPIToken != ""
}
