package mirror

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/redact"
)

// Config holds the CONTENT_* settings. The mirror is off unless Dir or
// Bucket is set (Enabled).
type Config struct {
	Dir             string // CONTENT_DIR: a local folder
	Bucket          string // CONTENT_BUCKET
	Endpoint        string // CONTENT_ENDPOINT: "" is AWS S3; R2 is https://ACCOUNT.r2.cloudflarestorage.com
	Region          string // CONTENT_REGION: DefaultRegion
	AccessKeyID     string // CONTENT_ACCESS_KEY_ID: with the secret, or neither (AWS's default chain)
	SecretAccessKey string // CONTENT_SECRET_ACCESS_KEY: never logged nor put in an error
	Prefix          string // CONTENT_PREFIX: DefaultPrefix

	HTTPClient *http.Client                                     // the SDK's default client when nil
	MaxRetries int                                              // retries after the first try: DefaultMaxRetries
	TryTimeout time.Duration                                    // per try, so a hung request is retried: DefaultTryTimeout
	Sleep      func(ctx context.Context, d time.Duration) error // waits between retries: retry.Sleep
	Rand       *rand.Rand                                       // jitter; seeded from the clock when nil

	pageSize int // keys per list page: 1000 (tests set it lower)
}

// Enabled reports whether a mirror is configured.
func (c Config) Enabled() bool { return c.Dir != "" || c.Bucket != "" }

// KeyPrefix is the prefix in force: Prefix, or DefaultPrefix. Pass it to
// Render, Key and Drift.
func (c Config) KeyPrefix() string { return c.withDefaults().Prefix }

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.Region == "" {
		c.Region = DefaultRegion
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	}
	if c.TryTimeout == 0 {
		c.TryTimeout = DefaultTryTimeout
	}
	if c.pageSize == 0 {
		c.pageSize = defaultPageSize
	}
	return c
}

// bucketName: S3's rule, 3 to 63 lowercase letters, digits, dots and
// hyphens, starting and ending with a letter or digit; compiled when first
// used, not when the program starts (docs/bench.md, "Round trips").
var bucketName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`) })

// Validate names the first setting that is wrong and the form expected;
// the error wraps policy.ErrConfig. A config that is not Enabled is valid
// unless it sets bucket-only settings.
func (c Config) Validate() error {
	if err := c.validate(); err != nil {
		return fmt.Errorf("mirror: %w: %w", err, policy.ErrConfig)
	}
	return nil
}

func (c Config) validate() error {
	s3Set := c.Endpoint != "" || c.AccessKeyID != "" || c.SecretAccessKey != "" || c.Region != ""
	switch {
	case c.Dir != "" && c.Bucket != "":
		return fmt.Errorf("CONTENT_DIR and CONTENT_BUCKET are both set; set one: a folder or a bucket")
	case c.Bucket == "" && s3Set:
		return fmt.Errorf("CONTENT_ENDPOINT, CONTENT_REGION and the CONTENT_*_KEY settings need CONTENT_BUCKET")
	case c.Prefix != "":
		if err := ValidatePrefix(c.Prefix); err != nil {
			return fmt.Errorf("CONTENT_PREFIX: %w", err)
		}
	}
	if c.Bucket == "" {
		return c.validateTuning()
	}
	if !bucketName().MatchString(c.Bucket) {
		return fmt.Errorf("CONTENT_BUCKET %s: want a bucket name, 3 to 63 lowercase letters, digits, dots and hyphens", redact.Quote(c.Bucket))
	}
	if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
		return fmt.Errorf("CONTENT_ACCESS_KEY_ID and CONTENT_SECRET_ACCESS_KEY: set both, or neither for AWS's default credential chain")
	}
	if err := validateEndpoint(c.Endpoint); err != nil {
		return err
	}
	return c.validateTuning()
}

// validateEndpoint accepts "" (AWS S3) or an http(s) URL with a host and
// nothing but a path; credentials written into it are refused and never
// shown.
func validateEndpoint(raw string) error {
	if raw == "" {
		return nil
	}
	const want = "want an http(s) URL such as https://ACCOUNT.r2.cloudflarestorage.com"
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return fmt.Errorf("CONTENT_ENDPOINT is not a URL: %s", want)
	}
	shown := redact.Quote(redact.URL(u))
	switch {
	case u.Host == "":
		// not shown: a value with no host may be a secret pasted here (review)
		return fmt.Errorf("CONTENT_ENDPOINT is not an http(s) URL with a host: %s", want)
	case u.User != nil:
		return fmt.Errorf("CONTENT_ENDPOINT %s holds credentials: put them in CONTENT_ACCESS_KEY_ID and CONTENT_SECRET_ACCESS_KEY", shown)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("CONTENT_ENDPOINT %s: %s", shown, want)
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("CONTENT_ENDPOINT %s: %s, without a query or fragment", shown, want)
	case u.Path != "" && u.Path != "/":
		// R2's bucket page shows the S3 URL with the bucket as its path:
		// taken as the endpoint, every key would land under that path,
		// outside the prefix (review)
		return fmt.Errorf("CONTENT_ENDPOINT %s: %s, without a path (the bucket goes in CONTENT_BUCKET)", shown, want)
	}
	return nil
}

func (c Config) validateTuning() error {
	if c.MaxRetries < 0 || c.TryTimeout < 0 {
		return fmt.Errorf("MaxRetries and TryTimeout must not be negative")
	}
	return nil
}

// New builds the target cfg names, after Validate: a Folder for Dir, an S3
// for Bucket. It makes no request. A config that is not Enabled is an error
// (ask Enabled first).
func New(ctx context.Context, cfg Config) (Target, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch {
	case cfg.Dir != "":
		return NewFolder(cfg.Dir, cfg.KeyPrefix())
	case cfg.Bucket != "":
		return NewS3(ctx, cfg)
	}
	return nil, fmt.Errorf("mirror: neither CONTENT_DIR nor CONTENT_BUCKET is set: %w", policy.ErrConfig)
}
