package cloudflare

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	cf "github.com/cloudflare/cloudflare-go"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// Defaults of Config.
const (
	DefaultBaseURL           = "https://api.cloudflare.com/client/v4"
	DefaultRequestsPerWindow = 1000 // of Cloudflare's 1,200: the token may be shared
	DefaultWindow            = 5 * time.Minute
	DefaultMaxRetries        = 5
	DefaultRequestTimeout    = 30 * time.Second
)

// Cloudflare's bulk limits: pairs (or keys) per request and bytes per body.
const (
	MaxBulkPairs = 10000
	MaxBulkBytes = 100_000_000
)

// listLimit is the largest page Cloudflare lists.
const listLimit = 1000

// codeKeyNotFound is Cloudflare's error code for a missing key (404).
const codeKeyNotFound = 10009

// ErrUnsuccessful fails a key that Cloudflare listed in a bulk answer's
// unsuccessful_keys: it was not written (or deleted) everywhere and should
// be retried.
var ErrUnsuccessful = errors.New("cloudflare reported the key unsuccessful")

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
	Logger            *slog.Logger  // discards when nil
}

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
			return fmt.Errorf("cloudflare: BaseURL %q is not an http(s) URL: %w", c.BaseURL, policy.ErrConfig)
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
// still answered after the retries is a *policy.RateLimitError (errors.Is
// policy.ErrRateLimited); a token refused (401, 403) or a namespace that does
// not exist (404 on the namespace) wraps policy.ErrConfig; a key listed in
// unsuccessful_keys wraps ErrUnsuccessful; anything else is wrapped as
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
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.Sleep == nil {
		cfg.Sleep = sleepContext
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		seed := uint64(cfg.Now().UnixNano())
		cfg.Rand = rand.New(rand.NewPCG(seed, seed>>1|1))
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.RequestsPerWindow == 0 {
		cfg.RequestsPerWindow = DefaultRequestsPerWindow
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	log := cfg.Logger.With("component", "cloudflare")

	client := &http.Client{}
	if cfg.HTTPClient != nil {
		*client = *cfg.HTTPClient
	}
	base := client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	rt := &transport{
		base: base,
		limiter: &window{
			n: cfg.RequestsPerWindow, w: cfg.Window, now: cfg.Now, sleep: cfg.Sleep, log: log,
		},
		now:        cfg.Now,
		sleep:      cfg.Sleep,
		maxRetries: cfg.MaxRetries,
		timeout:    cfg.RequestTimeout,
		log:        log,
		rand:       cfg.Rand,
	}
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
		client: client, rt: rt, log: log,
	}, nil
}

// API names the service in request counts and summaries.
const API = "cloudflare"

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

// edge translates an error of cloudflare-go (and of the transport under it)
// into the sentinels of package policy, with the API token scrubbed from its
// text: Cloudflare's answers can echo what they were sent.
func (s *Store) edge(ctx context.Context, err error) error {
	err = s.translate(ctx, err)
	if err == nil || s.cfg.APIToken == "" || !strings.Contains(err.Error(), s.cfg.APIToken) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), s.cfg.APIToken, "[REDACTED]"), err: err}
}

// redactedError shows a scrubbed message and keeps the chain for errors.Is.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func (s *Store) translate(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	var tries *attemptsError
	if errors.As(err, &tries) {
		return tries
	}
	var unauthorized *cf.AuthorizationError // 401
	var forbidden *cf.AuthenticationError   // 403
	if errors.As(err, &unauthorized) || errors.As(err, &forbidden) {
		return fmt.Errorf("token refused for account %s (%v): %w", s.cfg.AccountID, err, policy.ErrConfig)
	}
	var notFound *cf.NotFoundError
	if errors.As(err, &notFound) {
		if notFound.InternalErrorCodeIs(codeKeyNotFound) {
			return fmt.Errorf("%v: %w", err, policy.ErrNotFound)
		}
		return fmt.Errorf("namespace %s not found in account %s (%v): %w", s.cfg.NamespaceID, s.cfg.AccountID, err, policy.ErrConfig)
	}
	return err
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

// listedKey is one key of a listing page.
type listedKey struct {
	Name       string          `json:"name"`
	Expiration int64           `json:"expiration"`
	Metadata   json.RawMessage `json:"metadata"`
}

// List implements registry.Store: one request per 1,000 keys; items carry
// metadata and expiration but no value.
func (s *Store) List(ctx context.Context, prefix string) ([]registry.Item, error) {
	if s.closed.Load() {
		return nil, fmt.Errorf("cloudflare: list %q: %w", prefix, registry.ErrClosed)
	}
	var items []registry.Item
	cursor := ""
	seen := map[string]bool{}
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("cloudflare: list %q: %w", prefix, err)
		}
		q := url.Values{"limit": {strconv.Itoa(listLimit)}}
		if prefix != "" {
			q.Set("prefix", prefix)
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		r, err := s.api.Raw(ctx, http.MethodGet, s.namespacePath("keys")+"?"+q.Encode(), nil, nil)
		if err != nil {
			return nil, fmt.Errorf("cloudflare: list %q: %w", prefix, s.edge(ctx, err))
		}
		var page []listedKey
		if err := json.Unmarshal(r.Result, &page); err != nil {
			return nil, fmt.Errorf("cloudflare: list %q: decode page: %w", prefix, err)
		}
		for _, k := range page {
			it := registry.Item{Key: k.Name}
			if m := bytes.TrimSpace(k.Metadata); len(m) > 0 && string(m) != "null" {
				it.Metadata = json.RawMessage(bytes.Clone(m))
			}
			if k.Expiration > 0 {
				it.Expiration = time.Unix(k.Expiration, 0).UTC()
			}
			items = append(items, it)
		}
		if r.ResultInfo == nil || r.ResultInfo.Cursor == "" {
			break
		}
		cursor = r.ResultInfo.Cursor
		if seen[cursor] {
			return nil, fmt.Errorf("cloudflare: list %q: cursor repeated", prefix)
		}
		seen[cursor] = true
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].Key < items[j].Key })
	return items, nil
}

// bulkPair is one element of a bulk write body.
type bulkPair struct {
	Key           string          `json:"key"`
	Value         string          `json:"value"`
	Metadata      json.RawMessage `json:"metadata,omitempty"`
	ExpirationTTL int64           `json:"expiration_ttl,omitempty"`
	Base64        bool            `json:"base64,omitempty"`
}

// bulkResult is the result of a bulk write or delete, which cloudflare-go
// v0 does not decode.
type bulkResult struct {
	SuccessfulKeyCount int      `json:"successful_key_count"`
	UnsuccessfulKeys   []string `json:"unsuccessful_keys"`
}

// encodePair encodes p for the bulk endpoint: the value as a JSON string
// when it is valid UTF-8, else base64.
func encodePair(p registry.Pair) []byte {
	bp := bulkPair{Key: p.Key, Metadata: p.Metadata}
	if utf8.Valid(p.Value) {
		bp.Value = string(p.Value)
	} else {
		bp.Value = base64.StdEncoding.EncodeToString(p.Value)
		bp.Base64 = true
	}
	if p.TTL > 0 {
		bp.ExpirationTTL = int64((p.TTL + time.Second - 1) / time.Second)
	}
	return mustJSON(bp)
}

// bulkBody is one request's body and the keys it carries.
type bulkBody struct {
	keys []string
	body []byte
}

// chunk groups encoded elements into JSON arrays of at most MaxBulkPairs
// elements and MaxBulkBytes bytes.
func chunk(keys []string, elems [][]byte) []bulkBody {
	var out []bulkBody
	var cur bulkBody
	flush := func() {
		if len(cur.keys) > 0 {
			cur.body = append(cur.body, ']')
			out = append(out, cur)
		}
		cur = bulkBody{}
	}
	for i, e := range elems {
		if len(cur.keys) == MaxBulkPairs || (len(cur.keys) > 0 && len(cur.body)+1+len(e)+1 > MaxBulkBytes) {
			flush()
		}
		if len(cur.keys) == 0 {
			cur.body = append(cur.body, '[')
		} else {
			cur.body = append(cur.body, ',')
		}
		cur.body = append(cur.body, e...)
		cur.keys = append(cur.keys, keys[i])
	}
	flush()
	return out
}

// Put implements registry.Store: the pairs go as bulk writes, one request
// per 10,000 pairs or 100 MB (a single pair too: only the bulk endpoint
// writes metadata with the value).
func (s *Store) Put(ctx context.Context, pairs []registry.Pair) map[string]error {
	valid, outcome := registry.ValidatePairs(pairs)
	if len(valid) == 0 {
		return outcome
	}
	keys := registry.PairKeys(valid)
	if s.closed.Load() {
		return registry.FailAll(outcome, keys, fmt.Errorf("cloudflare: bulk write %d keys: %w", len(keys), registry.ErrClosed))
	}
	if err := ctx.Err(); err != nil {
		return registry.FailAll(outcome, keys, fmt.Errorf("cloudflare: bulk write %d keys: %w", len(keys), err))
	}
	elems := make([][]byte, len(valid))
	for i, p := range valid {
		elems[i] = encodePair(p)
	}
	for _, b := range chunk(keys, elems) {
		outcome = s.bulk(ctx, "write", http.MethodPut, s.namespacePath("bulk"), b, outcome, &s.writes)
	}
	return outcome
}

// Delete implements registry.Store with bulk deletes (POST .../bulk/delete),
// one request per 10,000 keys.
func (s *Store) Delete(ctx context.Context, keys []string) map[string]error {
	valid, outcome := registry.ValidateKeys(keys)
	if len(valid) == 0 {
		return outcome
	}
	if s.closed.Load() {
		return registry.FailAll(outcome, valid, fmt.Errorf("cloudflare: bulk delete %d keys: %w", len(valid), registry.ErrClosed))
	}
	if err := ctx.Err(); err != nil {
		return registry.FailAll(outcome, valid, fmt.Errorf("cloudflare: bulk delete %d keys: %w", len(valid), err))
	}
	elems := make([][]byte, len(valid))
	for i, k := range valid {
		elems[i] = mustJSON(k)
	}
	for _, b := range chunk(valid, elems) {
		outcome = s.bulk(ctx, "delete", http.MethodPost, s.namespacePath("bulk/delete"), b, outcome, &s.deletes)
	}
	return outcome
}

// bulk sends one bulk request and records the outcome of its keys: all of
// them failing when the request fails, those in unsuccessful_keys otherwise.
func (s *Store) bulk(ctx context.Context, verb, method, path string, b bulkBody, outcome map[string]error, billed *atomic.Int64) map[string]error {
	n := len(b.keys)
	r, err := s.api.Raw(ctx, method, path, b.body, http.Header{"Content-Type": {"application/json"}})
	if err == nil && !r.Success {
		err = fmt.Errorf("answer not successful: %v", r.Errors)
	}
	var res bulkResult
	if err == nil && len(r.Result) > 0 && string(r.Result) != "null" {
		if jerr := json.Unmarshal(r.Result, &res); jerr != nil {
			err = fmt.Errorf("decode result: %w", jerr)
		}
	}
	if err != nil {
		return registry.FailAll(outcome, b.keys, fmt.Errorf("cloudflare: bulk %s %d keys: %w", verb, n, s.edge(ctx, err)))
	}
	inBatch := make(map[string]bool, n)
	for _, k := range b.keys {
		inBatch[k] = true
	}
	failed := 0
	for _, k := range res.UnsuccessfulKeys {
		if !inBatch[k] {
			continue
		}
		inBatch[k] = false
		failed++
		outcome = registry.FailAll(outcome, []string{k}, fmt.Errorf("cloudflare: bulk %s %d keys: %q: %w", verb, n, k, ErrUnsuccessful))
	}
	billed.Add(int64(n - failed))
	return outcome
}

// mustJSON encodes v without HTML escaping; the types encoded here always
// encode.
func mustJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("cloudflare: encode %T: %v", v, err))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
