package config

import (
	"flag"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/redact"
)

// Config is every Setting of syncjob. Each one is an environment variable
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
	MaxDuration       time.Duration // a run's own deadline (0: none): see syncer.Options.MaxDuration
	MaxDelete         int           // the mass-delete guard refuses a plan that loses more than
	MaxDeletePercent  int           // MaxDelete policies and more than MaxDeletePercent of the registry
	LogFormat         string
	LogLevel          string
	StatusMaxAge      time.Duration
	Content           mirror.Config // CONTENT_*: the content mirror, off unless CONTENT_DIR or CONTENT_BUCKET is set
}

// Group is a set of settings that commands read together: each command
// binds (and its --help lists) only the groups it reads.
type Group uint8

const (
	Source   Group = 1 << iota // the GitHub repository
	Registry                   // where the registry is
	Run                        // how a run writes
	Logging
	Health // what status --check calls healthy
	// Label is the repository and branch alone, which status shows
	// (in place of those the last run recorded, when set).
	Label
	Mirror // the content mirror (CONTENT_*)
)

// Setting describes one Config field for env, flags and --help.
type Setting struct {
	Env, Flag, Def, Help string
	Kind                 string // what the value is, shown in --help: "owner/name", "duration", ...
	Group                Group
	Required             bool                            // by the commands that read the source (sync)
	set                  func(c *Config, v string) error // its error says what the value should be
}

// Settings is every setting, in the order --help and the README list them.
func Settings() []Setting {
	str := func(f func(*Config) *string) func(*Config, string) error {
		return func(c *Config, v string) error { *f(c) = v; return nil }
	}
	return []Setting{
		{Env: "GITHUB_REPO", Flag: "repo", Kind: "owner/name", Group: Source | Label, Required: true, Help: "GitHub repository", set: str(func(c *Config) *string { return &c.Repo })},
		{Env: "GITHUB_BRANCH", Flag: "branch", Kind: "name", Group: Source | Label, Def: "main", Help: "branch to sync", set: str(func(c *Config) *string { return &c.Branch })},
		{Env: "GITHUB_TOKEN", Flag: "github-token", Kind: "token", Group: Source, Help: "GitHub token (optional; raises the rate limit from 60 to 5,000 requests an hour)", set: str(func(c *Config) *string { return &c.GitHubToken })},
		{Env: "GITHUB_API_URL", Flag: "github-api-url", Kind: "URL", Group: Source, Def: "https://api.github.com/", Help: "GitHub REST API base URL (GitHub Enterprise, tests)", set: str(func(c *Config) *string { return &c.GitHubAPIURL })},
		{Env: "REGISTRY_PATH", Flag: "registry-path", Kind: "path", Group: Registry, Def: "./policy-registry.db", Help: "embedded registry file (used when Cloudflare is not configured)", set: str(func(c *Config) *string { return &c.RegistryPath })},
		{Env: "CLOUDFLARE_ACCOUNT_ID", Flag: "cloudflare-account-id", Kind: "id", Group: Registry, Help: "Cloudflare account id (with the namespace and token: use Workers KV)", set: str(func(c *Config) *string { return &c.CFAccountID })},
		{Env: "CLOUDFLARE_KV_NAMESPACE_ID", Flag: "cloudflare-kv-namespace-id", Kind: "id", Group: Registry, Help: "Workers KV namespace id", set: str(func(c *Config) *string { return &c.CFNamespaceID })},
		{Env: "CLOUDFLARE_API_TOKEN", Flag: "cloudflare-api-token", Kind: "token", Group: Registry, Help: "Cloudflare API token", set: str(func(c *Config) *string { return &c.CFAPIToken })},
		{Env: "CLOUDFLARE_API_URL", Flag: "cloudflare-api-url", Kind: "URL", Group: Registry, Def: "https://api.cloudflare.com/client/v4", Help: "Cloudflare API base URL", set: str(func(c *Config) *string { return &c.CFAPIURL })},
		{Env: "CONTENT_DIR", Flag: "content-dir", Kind: "path", Group: Mirror, Help: "content mirror in a local folder: {dir}/{prefix}{policyName}/policy.md", set: str(func(c *Config) *string { return &c.Content.Dir })},
		{Env: "CONTENT_BUCKET", Flag: "content-bucket", Kind: "name", Group: Mirror, Help: "content mirror in this S3-compatible bucket (Cloudflare R2)", set: str(func(c *Config) *string { return &c.Content.Bucket })},
		{Env: "CONTENT_ENDPOINT", Flag: "content-endpoint", Kind: "URL", Group: Mirror, Help: "the bucket's S3 endpoint, R2: https://ACCOUNT.r2.cloudflarestorage.com (empty: AWS S3)", set: str(func(c *Config) *string { return &c.Content.Endpoint })},
		{Env: "CONTENT_REGION", Flag: "content-region", Kind: "region", Group: Mirror, Def: mirror.DefaultRegion, Help: "the bucket's region; auto is R2's with CONTENT_ENDPOINT, and AWS's own (AWS_REGION) without", set: str(func(c *Config) *string { return &c.Content.Region })},
		{Env: "CONTENT_ACCESS_KEY_ID", Flag: "content-access-key-id", Kind: "id", Group: Mirror, Help: "S3 access key id of the bucket (with the secret, or neither for AWS's default credential chain)", set: str(func(c *Config) *string { return &c.Content.AccessKeyID })},
		{Env: "CONTENT_SECRET_ACCESS_KEY", Flag: "content-secret-access-key", Kind: "token", Group: Mirror, Help: "S3 secret access key of the bucket", set: str(func(c *Config) *string { return &c.Content.SecretAccessKey })},
		{Env: "CONTENT_PREFIX", Flag: "content-prefix", Kind: "prefix", Group: Mirror, Def: mirror.DefaultPrefix, Help: "key prefix of the mirror's objects; nothing outside it is touched", set: str(func(c *Config) *string { return &c.Content.Prefix })},
		{Env: "MAX_FILE_SIZE", Flag: "max-file-size", Kind: "bytes", Group: Run, Def: strconv.Itoa(policy.DefaultMaxFileSize), Help: "larger policy files are skipped and their entries kept", set: func(c *Config, v string) error {
			return parseInt(v, &c.MaxFileSize)
		}},
		{Env: "BATCH_SIZE", Flag: "batch-size", Kind: "int", Group: Run, Def: "50", Help: "registry writes per batch, one bulk request each on Cloudflare (1-10000: Cloudflare's bulk limit; raise it past a few thousand policies, docs/bench.md)", set: func(c *Config, v string) error {
			return parseInt(v, &c.BatchSize)
		}},
		{Env: "CONCURRENCY", Flag: "concurrency", Kind: "int", Group: Run, Def: "16", Help: "batches written at once (1-32; 16 keeps a first sync within 1.3x of the fewest requests possible, docs/bench.md)", set: func(c *Config, v string) error {
			return parseInt(v, &c.Concurrency)
		}},
		{Env: "RECONCILE_INTERVAL", Flag: "reconcile-interval", Kind: "duration", Group: Run, Def: "24h", Help: "a scheduled (or CLI) run is full when the last full run is older than this, less an hour's slack: the daily run reconciles", set: func(c *Config, v string) error {
			return parseDuration(v, &c.ReconcileInterval)
		}},
		{Env: "DAILY_WRITE_BUDGET", Flag: "daily-write-budget", Kind: "int", Group: Run, Def: "0", Help: "billable Cloudflare writes a UTC day may spend; a run applies what fits, in a stable order, and the next runs continue (0: no budget; the free plan has 1000)", set: func(c *Config, v string) error {
			return parseInt(v, &c.DailyWriteBudget)
		}},
		{Env: "MAX_DURATION", Flag: "max-duration", Kind: "duration", Group: Run, Def: "0", Help: "a run's deadline, as a Lambda invocation's: the run stops reading and writing in time to record itself partial, counting what waits (naming the first 20), and the next run continues (0: none; a first sync larger than one run, docs/bench.md)", set: func(c *Config, v string) error {
			return parseDuration(v, &c.MaxDuration)
		}},
		{Env: "MAX_DELETE", Flag: "max-delete", Kind: "count", Group: Run, Def: strconv.Itoa(differ.DefaultLimit.Count), Help: "the mass-delete guard refuses a plan that loses more than this many policies and more than MAX_DELETE_PERCENT of the registry (content kept under another name is not lost)", set: func(c *Config, v string) error {
			return parseInt(v, &c.MaxDelete)
		}},
		{Env: "MAX_DELETE_PERCENT", Flag: "max-delete-percent", Kind: "percent", Group: Run, Def: strconv.Itoa(differ.DefaultLimit.Percent), Help: "see MAX_DELETE: the share of the registry, 0-100, with or without %", set: func(c *Config, v string) error {
			return parseInt(strings.TrimSuffix(v, "%"), &c.MaxDeletePercent)
		}},
		{Env: "LOG_FORMAT", Flag: "log-format", Kind: "auto|json|text", Group: Logging, Def: "auto", Help: "auto: text on a terminal, JSON otherwise", set: str(func(c *Config) *string { return &c.LogFormat })},
		{Env: "LOG_LEVEL", Flag: "log-level", Kind: "debug|info|warn|error", Group: Logging, Def: "info", Help: "the least severe lines logged", set: str(func(c *Config) *string { return &c.LogLevel })},
		{Env: "STATUS_MAX_AGE", Flag: "max-age", Kind: "duration", Group: Health, Def: DefaultMaxAge, Help: "status --check: the last success must be younger than this (the daily schedule and 2 hours' slack, as the NoSuccess alarm)", set: func(c *Config, v string) error {
			return parseDuration(v, &c.StatusMaxAge)
		}},
	}
}

// DefaultMaxAge is the health check's default: a daily run and 2 hours for
// it to be late, run long or be retried.
const DefaultMaxAge = "26h"

func parseInt[T int | int64](v string, p *T) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return fmt.Errorf("%s is not a whole number", redact.Quote(v))
	}
	*p = T(n)
	return nil
}

func parseDuration(v string, p *time.Duration) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%s is not a duration such as 24h or 30m", redact.Quote(v))
	}
	*p = d
	return nil
}

// Bind registers the settings of groups as flags on fs, with env
// values as defaults; every other setting keeps its default, whatever the
// environment says (a command does not read it). The returned function
// completes the Config after fs.Parse.
func Bind(fs *flag.FlagSet, env func(string) string, groups Group) func() (Config, error) {
	type bound struct {
		s   Setting
		val *string
	}
	var all []bound
	for _, s := range Settings() {
		v := s.Def
		if s.Group&groups == 0 {
			all = append(all, bound{s, &v})
			continue
		}
		if e := env(s.Env); e != "" {
			v = e
		}
		help := fmt.Sprintf("%s (env %s", s.Help, s.Env)
		if s.Def != "" {
			help += ", default " + s.Def
		}
		if s.Required && groups&Source != 0 {
			help += ", required"
		}
		help += ")"
		p := new(string)
		fs.Var(&StringFlag{P: p, Kind: s.Kind}, s.Flag, help)
		*p = v
		all = append(all, bound{s, p})
	}
	return func() (Config, error) {
		var c Config
		for _, b := range all {
			if err := b.s.set(&c, strings.TrimSpace(*b.val)); err != nil {
				return c, &policy.ConfigError{Setting: b.s.Env, Problem: err.Error()}
			}
		}
		return c, c.Validate()
	}
}

// StringFlag is a plain string flag whose help shows its kind, not its value.
type StringFlag struct {
	P    *string
	Kind string // shown in --help in place of the value
}

// String is empty: the usage text states each default itself, and a
// secret's value must never reach the help output.
func (f *StringFlag) String() string     { return "" }
func (f *StringFlag) Set(v string) error { *f.P = v; return nil }

// MaxBatchSize bounds a batch: Cloudflare's bulk write takes at most
// 10,000 pairs a request (the store also splits a request at 100 MB). The
// default, 50, keeps the blast radius of one refused request small; a
// registry of many thousands of policies raises it, so that its first sync
// needs a dozen requests, not thousands of the 1,200 per 5 minutes the
// token has (docs/bench.md, "When to raise `BATCH_SIZE`").
const MaxBatchSize = 10000

// ValidateSource checks the GitHub settings, which only sync needs.
func (c Config) ValidateSource() error {
	switch {
	case c.Repo == "":
		return &policy.ConfigError{Setting: "GITHUB_REPO", Problem: "required: the repository to sync, as owner/name"}
	case !policy.IsRepo(c.Repo):
		return &policy.ConfigError{Setting: "GITHUB_REPO", Problem: fmt.Sprintf("%s is not owner/name", redact.Quote(c.Repo))}
	case c.Branch == "":
		return &policy.ConfigError{Setting: "GITHUB_BRANCH", Problem: "must not be empty"}
	case !isBranchName(c.Branch):
		return &policy.ConfigError{Setting: "GITHUB_BRANCH", Problem: fmt.Sprintf("%s is not a branch name git allows (no spaces, control characters, ~ ^ : ? * [ \\, \"..\" or \"@{\"; no leading \"-\", no empty or dot-led part, no trailing \".\", \"/\" or \".lock\")", redact.Quote(c.Branch))}
	}
	if err := checkToken("GITHUB_TOKEN", c.GitHubToken); err != nil {
		return err
	}
	return checkURL("GITHUB_API_URL", "GITHUB_TOKEN", c.GitHubAPIURL)
}

// isBranchName says whether git would take b as a branch name (git
// check-ref-format --branch): a name it refuses can only fail at GitHub,
// later and less clearly.
func isBranchName(b string) bool {
	if b == "@" || strings.HasPrefix(b, "-") || strings.HasSuffix(b, ".") || strings.Contains(b, "..") || strings.Contains(b, "@{") {
		return false
	}
	if strings.ContainsFunc(b, func(r rune) bool { return r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) }) {
		return false
	}
	for _, part := range strings.Split(b, "/") {
		if part == "" || strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return false
		}
	}
	return true
}

// Validate checks every Setting but the GitHub ones and names the first one that is wrong.
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
	case c.BatchSize < 1 || c.BatchSize > MaxBatchSize:
		return &policy.ConfigError{Setting: "BATCH_SIZE", Problem: fmt.Sprintf("%d is outside 1-%d", c.BatchSize, MaxBatchSize)}
	case c.Concurrency < 1 || c.Concurrency > 32:
		return &policy.ConfigError{Setting: "CONCURRENCY", Problem: fmt.Sprintf("%d is outside 1-32", c.Concurrency)}
	case c.DailyWriteBudget < 0:
		return &policy.ConfigError{Setting: "DAILY_WRITE_BUDGET", Problem: "must not be negative (0: no budget)"}
	case c.MaxDuration < 0:
		return &policy.ConfigError{Setting: "MAX_DURATION", Problem: fmt.Sprintf("%s is negative: give a duration such as 10m (0: none)", c.MaxDuration)}
	case c.MaxDelete < 0:
		return &policy.ConfigError{Setting: "MAX_DELETE", Problem: fmt.Sprintf("%d is negative: give how many policies a plan may lose", c.MaxDelete)}
	case c.MaxDeletePercent < 0 || c.MaxDeletePercent > 100:
		return &policy.ConfigError{Setting: "MAX_DELETE_PERCENT", Problem: fmt.Sprintf("%d is outside 0-100", c.MaxDeletePercent)}
	case c.ReconcileInterval < time.Hour:
		return &policy.ConfigError{Setting: "RECONCILE_INTERVAL", Problem: "must be at least 1h"}
	case c.StatusMaxAge < time.Minute:
		return &policy.ConfigError{Setting: "STATUS_MAX_AGE", Problem: "must be at least 1m"}
	case c.LogFormat != "auto" && c.LogFormat != "json" && c.LogFormat != "text":
		return &policy.ConfigError{Setting: "LOG_FORMAT", Problem: fmt.Sprintf("%s is not auto, json or text", redact.Quote(c.LogFormat))}
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return &policy.ConfigError{Setting: "LOG_LEVEL", Problem: fmt.Sprintf("%s is not debug, info, warn or error", redact.Quote(c.LogLevel))}
	}
	return c.validateContent()
}

// contentSetting finds the setting a mirror.Config.Validate error names
// (compiled when first used, not when the program starts: docs/bench.md,
// "Round trips").
var contentSetting = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`CONTENT_[A-Z_]+`) })

// validateContent checks the CONTENT_* settings with mirror.Config.Validate
// and names the first setting it blames. The secret key is never shown.
func (c Config) validateContent() error {
	if err := c.MirrorConfig().Validate(); err != nil {
		setting := contentSetting().FindString(err.Error())
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

// MirrorConfig is the mirror's configuration: the CONTENT_* settings, the
// bucket-only ones (the region's default among them) dropped when no
// bucket is set, so a folder mirror or none is not refused for them.
func (c Config) MirrorConfig() mirror.Config {
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
	switch {
	case v != "" && len(v) < redact.MinSecretLen:
		return &policy.ConfigError{Setting: name, Problem: fmt.Sprintf("is %d characters long: too short to be a token (at least %d; GitHub's and Cloudflare's have 40 or more)", len(v), redact.MinSecretLen)}
	case strings.ContainsFunc(v, unicode.IsControl):
		// it could never be sent in a header: a run failed (exit 1) or
		// retried for 25 s, never naming the setting (an adversarial helper)
		return &policy.ConfigError{Setting: name, Problem: "holds a control character (a pasted line break or tab?): a token has none"}
	}
	return nil
}

// checkURL checks the API base URL of Setting name. Credentials written
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
	case u.Host == "":
		// not shown: a value with no host may be a token pasted here
		return &policy.ConfigError{Setting: name, Problem: "is not an http(s) URL (no scheme and host; give it as https://host/path)"}
	case u.Scheme != "http" && u.Scheme != "https":
		return &policy.ConfigError{Setting: name, Problem: fmt.Sprintf("%s is not an http(s) URL", redact.Quote(redact.URL(u)))}
	}
	return nil
}

// Cloudflare reports whether the registry is Cloudflare Workers KV.
func (c Config) Cloudflare() bool {
	return c.CFAccountID != "" && c.CFNamespaceID != "" && c.CFAPIToken != ""
}
