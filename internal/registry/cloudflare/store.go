package cloudflare

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	cf "github.com/cloudflare/cloudflare-go"

	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/redact"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/retry"
)

// Defaults of Config.
const (
	DefaultBaseURL           = "https://api.cloudflare.com/client/v4"
	DefaultRequestsPerWindow = 1000 // of Cloudflare's 1,200: the token may be shared
	DefaultWindow            = 5 * time.Minute
	DefaultMaxRetries        = 5
	DefaultRequestTimeout    = 30 * time.Second
)

// Config configures a Store. AccountID, NamespaceID and APIToken are
// required; every other zero field takes its default.
type Config struct {
	AccountID   string
	NamespaceID string
	APIToken    string // never logged nor put in an error
	BaseURL     string // DefaultBaseURL; CLOUDFLARE_API_URL overrides it

	HTTPClient *http.Client                                     // http.DefaultClient's settings; its Transport is wrapped
	Sleep      func(ctx context.Context, d time.Duration) error // waits d or until ctx is done
	Now        func() time.Time                                 // time.Now
	Rand       *rand.Rand                                       // jitter; seeded from the clock when nil

	MaxRetries        int           // retries after the first try: DefaultMaxRetries
	RequestTimeout    time.Duration // per try, so a hung request is retried: DefaultRequestTimeout
	RequestsPerWindow int           // DefaultRequestsPerWindow
	Window            time.Duration // DefaultWindow
	MaxBulkBytes      int           // per bulk write body: MaxBulkBytes (a test lowers it)
	Logger            *slog.Logger  // discards when nil
	// OnWait, when set, hears each wait that holds requests back before it
	// starts: how long, and for what (WaitRateWindow, Wait429). The CLI
	// shows it on a terminal's status line. Called concurrently.
	OnWait func(d time.Duration, why string)
}

// What a wait is for, as Config.OnWait hears it.
const (
	WaitRateWindow = "Cloudflare's rate window"
	Wait429        = "Cloudflare's 429 (too many requests)"
)

// Validate names the first required field that is missing; the error wraps
// policy.ErrConfig.
func (c Config) Validate() error {
	for _, f := range []struct{ name, v string }{
		{"AccountID (CLOUDFLARE_ACCOUNT_ID)", c.AccountID},
		{"NamespaceID (CLOUDFLARE_KV_NAMESPACE_ID)", c.NamespaceID},
		{"APIToken (CLOUDFLARE_API_TOKEN)", c.APIToken},
	} {
		if strings.TrimSpace(f.v) == "" {
			return fmt.Errorf("cloudflare: %s is required: %w", f.name, policy.ErrConfig)
		}
	}
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			shown := "(unparsable)"
			if err == nil {
				shown = redact.URL(u)
			}
			return fmt.Errorf("cloudflare: BaseURL %q is not an http(s) URL: %w", shown, policy.ErrConfig)
		}
	}
	if c.MaxRetries < 0 || c.RequestsPerWindow < 0 || c.Window < 0 || c.RequestTimeout < 0 {
		return fmt.Errorf("cloudflare: MaxRetries, RequestsPerWindow, Window and RequestTimeout must not be negative: %w", policy.ErrConfig)
	}
	return nil
}

// Store is a registry.Store over one Workers KV namespace. Safe for
// concurrent use.
//
// Errors: a key Cloudflare does not have wraps policy.ErrNotFound; a 429
// still answered after the retries, or whose wait would pass the context's
// deadline (as would the rate window's), is a *policy.RateLimitError
// (errors.Is policy.ErrRateLimited) saying when to retry; a token refused (401, 403) or a namespace that does
// not exist (404 on the namespace) wraps policy.ErrConfig; a key still
// listed in unsuccessful_keys after three re-sends (1 s, 2 s, 4 s apart)
// wraps ErrUnsuccessful; anything else is wrapped as
// "cloudflare: bulk write 50 keys: ...".
type Store struct {
	cfg    Config
	api    *cf.API
	rc     *cf.ResourceContainer
	client *http.Client
	rt     *transport
	log    *slog.Logger

	writes  atomic.Int64
	deletes atomic.Int64
	closed  atomic.Bool
	// making lets one large streamed body be made at a time (makingGate).
	making makingGate
}

var _ registry.Store = (*Store)(nil)

// New returns a Store for cfg, after Validate. It makes no request.
//
// Wiring from the environment:
//
//	cloudflare.New(cloudflare.Config{
//		AccountID:   os.Getenv("CLOUDFLARE_ACCOUNT_ID"),
//		NamespaceID: os.Getenv("CLOUDFLARE_KV_NAMESPACE_ID"),
//		APIToken:    os.Getenv("CLOUDFLARE_API_TOKEN"),
//		BaseURL:     os.Getenv("CLOUDFLARE_API_URL"), // "" is the default
//		Logger:      logger,
//	})
func New(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	log := cfg.Logger.With(logkey.Component, "cloudflare")
	client := &http.Client{}
	if cfg.HTTPClient != nil {
		*client = *cfg.HTTPClient
	}
	rt := newTransport(client.Transport, cfg, log)
	client.Transport = rt
	api, err := cf.NewWithAPIToken(cfg.APIToken,
		cf.BaseURL(cfg.BaseURL),
		cf.HTTPClient(client),
		// This package is the single retry and rate layer (see doc.go).
		cf.UsingRetryPolicy(0, 0, 0),
		cf.UsingRateLimit(math.MaxFloat64),
		cf.UserAgent("syncjob"),
	)
	if err != nil {
		return nil, fmt.Errorf("cloudflare: new client: %w", policy.ErrConfig)
	}
	return &Store{
		cfg: cfg, api: api, rc: cf.AccountIdentifier(cfg.AccountID),
		client: client, rt: rt, log: log, making: make(makingGate, 1),
	}, nil
}

// withDefaults fills the zero fields of c.
func (c Config) withDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.Sleep == nil {
		c.Sleep = retry.Sleep
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		seed := uint64(c.Now().UnixNano())
		c.Rand = rand.New(rand.NewPCG(seed, seed>>1|1))
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.RequestsPerWindow == 0 {
		c.RequestsPerWindow = DefaultRequestsPerWindow
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.MaxBulkBytes == 0 {
		c.MaxBulkBytes = MaxBulkBytes
	}
	if c.OnWait == nil {
		c.OnWait = func(time.Duration, string) {}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// API names the service in request counts and summaries.
const API = "cloudflare"

// EventuallyConsistent says that Workers KV's reads may lag its writes: a
// write can take 60 s or more to be seen from another location.
func (s *Store) EventuallyConsistent() bool { return true }

// Usage implements registry.Store: every HTTP request, retries included;
// the billable writes (each pair a bulk write applied: Cloudflare bills each
// pair as one write) and deletes (each key a bulk delete removed: billed on
// a line of their own).
func (s *Store) Usage() registry.Usage {
	return registry.Usage{
		API:      API,
		Requests: s.rt.requests.Load(),
		Billing:  true,
		Writes:   s.writes.Load(),
		Deletes:  s.deletes.Load(),
	}
}

// Close implements registry.Store.
func (s *Store) Close() error {
	if !s.closed.Swap(true) {
		s.client.CloseIdleConnections()
	}
	return nil
}

func (s *Store) namespacePath(rest string) string {
	return fmt.Sprintf("/accounts/%s/storage/kv/namespaces/%s/%s", url.PathEscape(s.cfg.AccountID), url.PathEscape(s.cfg.NamespaceID), rest)
}

// Get implements registry.Store.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if err := registry.CheckKey(key); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, fmt.Errorf("cloudflare: get %q: %w", key, registry.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cloudflare: get %q: %w", key, err)
	}
	// GetWorkersKV escapes the key with url.PathEscape.
	v, err := s.api.GetWorkersKV(ctx, s.rc, cf.GetWorkersKVParams{NamespaceID: s.cfg.NamespaceID, Key: key})
	if err != nil {
		return nil, fmt.Errorf("cloudflare: get %q: %w", key, s.edge(ctx, err))
	}
	if v == nil {
		v = []byte{}
	}
	return v, nil
}
