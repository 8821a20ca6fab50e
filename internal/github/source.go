package github

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	gh "github.com/google/go-github/v66/github"

	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/redact"
	"github.com/knue/syncjob/internal/retry"
)

// Defaults of Config.
const (
	DefaultBaseURL          = "https://api.github.com/"
	DefaultBranch           = "main"
	DefaultArchiveThreshold = 10
	DefaultTimeout          = 60 * time.Second
	DefaultArchiveSlack     = 512 << 20
	DefaultIdleTimeout      = 30 * time.Second
	DefaultArchiveTimeout   = 5 * time.Minute
)

// Config says which repository and branch to read and how.
type Config struct {
	Owner, Repo string
	Branch      string // default "main"
	Token       string // optional; sent only to the API host
	BaseURL     string // default https://api.github.com/
	// HTTPClient is optional; its Transport, Timeout (default 60s per request
	// when the client is nil) and Jar are used.
	HTTPClient *http.Client
	// Sleep waits between retries; default a timer that honours ctx.
	Sleep func(ctx context.Context, d time.Duration) error
	// Backoff is the wait before each retry: len(Backoff) retries after the
	// first attempt. nil means 1s, 2s, 4s; an empty non-nil slice disables retries.
	Backoff []time.Duration
	// ArchiveThreshold: Titles and Contents read one tarball when more
	// files than this are wanted, else one blob request per file. 0 means
	// 10; negative means always the tarball.
	ArchiveThreshold int
	// ArchiveSlack is how many decompressed bytes a tarball may hold
	// beyond the wanted files (other files, tar headers) before it is
	// abandoned and the files it has not delivered are read as blobs: the
	// bound on a gzip bomb when the commit's tree was not listed by Tree.
	// After Tree, the bound is the tree's own total size (its blobs and
	// tar's overhead per entry), however large the repository.
	// 0 means DefaultArchiveSlack (512 MiB).
	ArchiveSlack int64
	// IdleTimeout ends a blob or archive download that makes no progress
	// for this long (before its first byte, or between reads): a blob is
	// then retried, the archive left for blob reads. 0 means
	// DefaultIdleTimeout (30s).
	IdleTimeout time.Duration
	// ArchiveTimeout bounds one archive download from its request to its
	// last byte (it is not under the HTTPClient's Timeout, which a large
	// archive may need longer than); past it the rest is read as blobs.
	// 0 means DefaultArchiveTimeout (5 minutes).
	ArchiveTimeout time.Duration
	// Progress, if set, is called after each file Titles or Contents reads.
	Progress func(done, total int)
	Logger   *slog.Logger
	// Now is the clock used to turn Retry-After into a time; default time.Now.
	Now func() time.Time
}

// withDefaults fills the zero fields of c.
func (c Config) withDefaults() Config {
	if c.Branch == "" {
		c.Branch = DefaultBranch
	}
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if !strings.HasSuffix(c.BaseURL, "/") {
		c.BaseURL += "/"
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: DefaultTimeout}
	}
	if c.Sleep == nil {
		c.Sleep = retry.Sleep
	}
	if c.Backoff == nil {
		c.Backoff = []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second}
	}
	if c.ArchiveThreshold == 0 {
		c.ArchiveThreshold = DefaultArchiveThreshold
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.ArchiveTimeout <= 0 {
		c.ArchiveTimeout = DefaultArchiveTimeout
	}
	if c.ArchiveSlack <= 0 {
		c.ArchiveSlack = DefaultArchiveSlack
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// check names the first bad field of c (after withDefaults) in an error
// wrapping policy.ErrConfig, else returns the parsed BaseURL.
func (c Config) check() (*url.URL, error) {
	if c.Owner == "" || strings.ContainsAny(c.Owner, "/ ") {
		return nil, fmt.Errorf("github: config Owner %q: %w", c.Owner, policy.ErrConfig)
	}
	if c.Repo == "" || strings.ContainsAny(c.Repo, "/ ") {
		return nil, fmt.Errorf("github: config Repo %q: %w", c.Repo, policy.ErrConfig)
	}
	base, err := url.Parse(c.BaseURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		shown := "(unparsable)"
		if err == nil {
			shown = redact.URL(base)
		}
		return nil, fmt.Errorf("github: config BaseURL %q is not an http(s) URL: %w", shown, policy.ErrConfig)
	}
	return base, nil
}

// Source reads one branch of one repository. It is safe for concurrent use.
type Source struct {
	owner, repo, branch string
	token               string
	secrets             []string // the token and credentials written into BaseURL: never shown
	client              *gh.Client
	http                *http.Client // counting, token only to the API host
	downloads           *http.Client // http without its Timeout: archives are bounded by archiveTimeout
	links               *http.Client // http not following redirects: the archive link is one
	retries             retry.Policy // do adds the log line of each retry
	threshold           int
	slack               int64      // see Config.ArchiveSlack
	listed              treeSizes  // the archive bound of the tree last listed
	ahead               prefetches // archive reads started ahead (PrefetchArchive)
	idle                time.Duration
	archiveTimeout      time.Duration
	progress            func(done, total int)
	log                 *slog.Logger
	now                 func() time.Time
	requests            atomic.Int64
}

// New checks cfg and builds a Source. A bad field is an error wrapping
// policy.ErrConfig that names it.
func New(cfg Config) (*Source, error) {
	cfg = cfg.withDefaults()
	base, err := cfg.check()
	if err != nil {
		return nil, err
	}
	s := &Source{
		owner:          cfg.Owner,
		repo:           cfg.Repo,
		branch:         cfg.Branch,
		token:          cfg.Token,
		secrets:        append([]string{cfg.Token}, redact.URLSecrets(cfg.BaseURL)...),
		threshold:      cfg.ArchiveThreshold,
		slack:          cfg.ArchiveSlack,
		idle:           cfg.IdleTimeout,
		archiveTimeout: cfg.ArchiveTimeout,
		progress:       cfg.Progress,
		log:            cfg.Logger.With(logkey.Component, "github"),
		now:            cfg.Now,
	}
	s.retries = s.retryPolicy(cfg.Sleep, cfg.Backoff)
	s.http = newHTTPClient(cfg.HTTPClient, cfg.Token, base.Host, &s.requests)
	s.downloads = &http.Client{Transport: s.http.Transport, Jar: s.http.Jar}
	s.links = &http.Client{
		Transport: s.http.Transport, Jar: s.http.Jar, Timeout: s.http.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	s.client = gh.NewClient(s.http)
	s.client.BaseURL = base
	s.client.UploadURL = base
	return s, nil
}

// masked is err with the secrets masked in its text (see redact.Error).
func (s *Source) masked(err error) error { return redact.Error(err, s.secrets...) }

// maskedText is text with the secrets masked, for logs.
func (s *Source) maskedText(text string) string { return redact.String(text, s.secrets...) }

// Requests returns the number of HTTP requests sent to GitHub so far,
// retries and archive downloads included.
func (s *Source) Requests() int64 { return s.requests.Load() }

// Head returns the commit sha at the branch head with exactly one request
// (more only when a transient failure is retried). Errors: policy.ErrConfig
// (unknown repository or branch, bad credentials), policy.ErrRateLimited.
func (s *Source) Head(ctx context.Context) (string, error) {
	op := "get head of " + s.owner + "/" + s.repo + " branch " + s.branch
	var sha string
	err := s.do(ctx, op, func(ctx context.Context) (*gh.Response, error) {
		v, resp, err := s.client.Repositories.GetCommitSHA1(ctx, s.owner, s.repo, s.branch, "")
		sha = v
		return resp, err
	})
	if err != nil {
		switch statusOf(err) {
		case http.StatusNotFound, http.StatusUnprocessableEntity:
			if rateLimitOf(err, s.now()) == nil {
				return "", s.masked(fmt.Errorf("github: %s: repository or branch not found (or not visible to this token): %w", op, policy.ErrConfig))
			}
		case http.StatusConflict:
			return "", s.masked(fmt.Errorf("github: %s: repository is empty: %w", op, policy.ErrConfig))
		}
		return "", s.translate(op, err)
	}
	sha = strings.TrimSpace(sha)
	if !isSHA(sha) {
		return "", s.masked(fmt.Errorf("github: %s: answer %q is not a commit sha", op, redact.Cut(sha, 60, s.secrets...)))
	}
	return sha, nil
}

func isSHA(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
