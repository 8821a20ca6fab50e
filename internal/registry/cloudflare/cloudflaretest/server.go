package cloudflaretest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Cloudflare's Workers KV limits, as the fake enforces them.
const (
	MaxKeyBytes      = 512
	MaxValueBytes    = 25 << 20
	MaxMetadataBytes = 1024
	MaxBulkPairs     = 10000
	MaxBulkBytes     = 100_000_000
	MinTTLSeconds    = 60
	MinListLimit     = 10
	MaxListLimit     = 1000
	MaxBulkGetKeys   = 100
)

// BasePath is where the fake serves the v4 API, as api.cloudflare.com does.
const BasePath = "/client/v4"

// Endpoint names one KV endpoint, for request counts.
type Endpoint string

// The endpoints the fake serves.
const (
	List       Endpoint = "list"        // GET    .../keys
	Get        Endpoint = "get"         // GET    .../values/{key}
	Metadata   Endpoint = "metadata"    // GET    .../metadata/{key}
	Put        Endpoint = "put"         // PUT    .../values/{key}
	Delete     Endpoint = "delete"      // DELETE .../values/{key}
	BulkPut    Endpoint = "bulk-put"    // PUT    .../bulk
	BulkDelete Endpoint = "bulk-delete" // POST   .../bulk/delete (current API) or DELETE .../bulk (cloudflare-go v0)
	BulkGet    Endpoint = "bulk-get"    // POST   .../bulk/get
	Unknown    Endpoint = "unknown"     // anything else (404, code 7003)
)

// Config configures a Fake. Zero fields take the defaults shown.
type Config struct {
	AccountID   string           // "account"
	NamespaceID string           // "namespace"
	Token       string           // "token"; requests need "Authorization: Bearer <Token>"
	Now         func() time.Time // time.Now; decides expiry
	Seed        uint64           // seeds Rates and FailKeyFraction draws
	// MaxBulkBytes bounds a bulk body: MaxBulkBytes, Cloudflare's limit,
	// when 0 (a test lowers it rather than send 100 MB under -race).
	MaxBulkBytes int
}

// Fake is a fake Cloudflare v4 Workers KV API. Safe for concurrent use.
type Fake struct {
	cfg     Config
	srv     *httptest.Server
	closing chan struct{}
	once    sync.Once

	mu           sync.Mutex
	data         map[string]entry
	rng          *rand.Rand
	next         []Fault
	nextList     map[string][]Fault // FailListing: by prefix
	rates        Rates
	failKeys     map[string]bool
	failFraction float64
	counts       map[Endpoint]int
	total        int
	bulkPairs    int
	faults       FaultCounts
	writes       map[string]int // landed writes by key, since New (KeyWrites)
	// order is every key of data, sorted; nil when a key was added or
	// removed since (ordered rebuilds it): a listing page then costs its
	// keys, not a sort of the namespace (200 pages of a 200,000-key
	// namespace were seconds of the fake's CPU)
	order []string
}

type entry struct {
	value    []byte
	metadata json.RawMessage
	exp      time.Time // zero: never
}

// New starts a fake server; Close it when done.
func New(cfg Config) *Fake {
	if cfg.AccountID == "" {
		cfg.AccountID = "account"
	}
	if cfg.NamespaceID == "" {
		cfg.NamespaceID = "namespace"
	}
	if cfg.Token == "" {
		cfg.Token = "token"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxBulkBytes == 0 {
		cfg.MaxBulkBytes = MaxBulkBytes
	}
	f := &Fake{
		cfg:     cfg,
		closing: make(chan struct{}),
		data:    make(map[string]entry),
		rng:     rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		counts:  make(map[Endpoint]int),
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	return f
}

// BaseURL is the API base to give a client, like
// https://api.cloudflare.com/client/v4.
func (f *Fake) BaseURL() string { return f.srv.URL + BasePath }

// Client returns an HTTP client for the server.
func (f *Fake) Client() *http.Client { return f.srv.Client() }

// Close releases hanging requests and stops the server.
func (f *Fake) Close() {
	f.once.Do(func() {
		close(f.closing)
		f.srv.Close()
	})
}

// FailNext queues faults: each of the next requests meets the next fault.
func (f *Fake) FailNext(faults ...Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next = append(f.next, faults...)
}

// FailListing queues faults for the listings of prefix alone: each of its
// next list requests (the first page or another, a retry or not) meets the
// next fault. Other requests do not take them, however many run beside.
func (f *Fake) FailListing(prefix string, faults ...Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.nextList == nil {
		f.nextList = map[string][]Fault{}
	}
	f.nextList[prefix] = append(f.nextList[prefix], faults...)
}

// SetRates makes requests meet faults at seeded rates; Rates{} stops them.
func (f *Fake) SetRates(r Rates) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rates = r
}

// FailKeys makes bulk writes and bulk deletes report these keys in
// unsuccessful_keys without applying them; no keys clears.
func (f *Fake) FailKeys(keys ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failKeys = make(map[string]bool, len(keys))
	for _, k := range keys {
		f.failKeys[k] = true
	}
}

// FailKeyFraction makes each key of a bulk write or delete fail with
// probability p (seeded), as FailKeys does; 0 stops it.
func (f *Fake) FailKeyFraction(p float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failFraction = p
}

// Requests returns how many requests reached the endpoint, faults included.
func (f *Fake) Requests(e Endpoint) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[e]
}

// TotalRequests returns how many requests reached the server.
func (f *Fake) TotalRequests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.total
}

// BulkPairsWritten returns how many pairs bulk writes applied: the billable
// writes of the bulk endpoint.
func (f *Fake) BulkPairsWritten() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bulkPairs
}

// KeyWrites returns how many writes (single or bulk) landed on each key
// that starts with prefix since New; ResetCounts leaves them. A key
// written more than once across runs is work a run did again.
func (f *Fake) KeyWrites(prefix string) map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, n := range f.writes {
		if strings.HasPrefix(k, prefix) {
			out[k] = n
		}
	}
	return out
}

// wrote counts a landed write of key; the caller holds f.mu.
func (f *Fake) wrote(key string) {
	if f.writes == nil {
		f.writes = map[string]int{}
	}
	f.writes[key]++
}

// Faults returns how many faults the fake injected since New, by kind.
func (f *Fake) Faults() FaultCounts {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.faults
}

// ResetCounts zeroes the request counts.
func (f *Fake) ResetCounts() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts = make(map[Endpoint]int)
	f.total = 0
	f.bulkPairs = 0
}

// Set stores a key directly, without a request (test setup). ttl 0 means no
// expiry.
func (f *Fake) Set(key string, value []byte, metadata json.RawMessage, ttl time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := entry{value: bytes.Clone(value), metadata: bytes.Clone(metadata)}
	if ttl > 0 {
		e.exp = f.cfg.Now().Add(ttl)
	}
	f.setData(key, e)
}

// Value returns a live key's value and metadata, without a request.
func (f *Fake) Value(key string) (value []byte, metadata json.RawMessage, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.live(key)
	if !ok {
		return nil, nil, false
	}
	return bytes.Clone(e.value), bytes.Clone(e.metadata), true
}

// Keys returns the live keys, sorted bytewise, without a request.
func (f *Fake) Keys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sortedKeys("")
}

// live returns a key that has not expired; f.mu is held.
func (f *Fake) live(key string) (entry, bool) {
	e, ok := f.data[key]
	if !ok || (!e.exp.IsZero() && !f.cfg.Now().Before(e.exp)) {
		return entry{}, false
	}
	return e, true
}

// sortedKeys returns the live keys with prefix; f.mu is held.
func (f *Fake) sortedKeys(prefix string) []string {
	var keys []string
	order := f.ordered()
	for _, k := range order[sort.SearchStrings(order, prefix):] {
		if !strings.HasPrefix(k, prefix) {
			break
		}
		if _, ok := f.live(k); ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// ordered is every key, sorted (see Fake.order); the caller holds f.mu.
func (f *Fake) ordered() []string {
	if f.order == nil {
		f.order = make([]string, 0, len(f.data))
		for k := range f.data {
			f.order = append(f.order, k)
		}
		sort.Strings(f.order)
	}
	return f.order
}

// setData stores e at key; the caller holds f.mu.
func (f *Fake) setData(key string, e entry) {
	if _, ok := f.data[key]; !ok {
		f.order = nil
	}
	f.data[key] = e
}

// deleteData removes key; the caller holds f.mu.
func (f *Fake) deleteData(key string) {
	if _, ok := f.data[key]; ok {
		f.order = nil
	}
	delete(f.data, key)
}

// apiError is one entry of the envelope's "errors".
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// envelope is the v4 response body.
type envelope struct {
	Success    bool        `json:"success"`
	Errors     []apiError  `json:"errors"`
	Messages   []apiError  `json:"messages"`
	Result     any         `json:"result"`
	ResultInfo *resultInfo `json:"result_info,omitempty"`
}

type resultInfo struct {
	Count  int    `json:"count"`
	Cursor string `json:"cursor"`
}

func writeEnvelope(w http.ResponseWriter, status int, result any, info *resultInfo, errs ...apiError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if errs == nil {
		errs = []apiError{}
	}
	_ = json.NewEncoder(w).Encode(envelope{Success: len(errs) == 0, Errors: errs, Messages: []apiError{}, Result: result, ResultInfo: info})
}

func fail(w http.ResponseWriter, status, code int, format string, args ...any) {
	writeEnvelope(w, status, nil, nil, apiError{Code: code, Message: fmt.Sprintf(format, args...)})
}

// route is a parsed request path.
type route struct {
	endpoint  Endpoint
	account   string
	namespace string
	key       string
}

// parse reads the escaped path segment by segment, so a key's escaped '/',
// '?', '#' or '%' stays in the key and is unescaped exactly once.
func parse(r *http.Request) route {
	p, ok := strings.CutPrefix(r.URL.EscapedPath(), BasePath+"/accounts/")
	if !ok {
		return route{endpoint: Unknown}
	}
	segs := strings.Split(p, "/")
	if len(segs) < 6 || segs[1] != "storage" || segs[2] != "kv" || segs[3] != "namespaces" {
		return route{endpoint: Unknown}
	}
	rt := route{endpoint: Unknown, account: unescape(segs[0]), namespace: unescape(segs[4])}
	rest := segs[5:]
	switch {
	case len(rest) == 1 && rest[0] == "keys" && r.Method == http.MethodGet:
		rt.endpoint = List
	case len(rest) == 1 && rest[0] == "bulk" && r.Method == http.MethodPut:
		rt.endpoint = BulkPut
	case len(rest) == 1 && rest[0] == "bulk" && r.Method == http.MethodDelete:
		rt.endpoint = BulkDelete
	case len(rest) == 2 && rest[0] == "bulk" && rest[1] == "delete" && r.Method == http.MethodPost:
		rt.endpoint = BulkDelete
	case len(rest) == 2 && rest[0] == "bulk" && rest[1] == "get" && r.Method == http.MethodPost:
		rt.endpoint = BulkGet
	case len(rest) >= 2 && rest[0] == "values":
		rt.key = unescapeKey(rest[1:])
		switch r.Method {
		case http.MethodGet:
			rt.endpoint = Get
		case http.MethodPut:
			rt.endpoint = Put
		case http.MethodDelete:
			rt.endpoint = Delete
		}
	case len(rest) >= 2 && rest[0] == "metadata" && r.Method == http.MethodGet:
		rt.key = unescapeKey(rest[1:])
		rt.endpoint = Metadata
	}
	return rt
}

func unescape(s string) string {
	u, err := url.PathUnescape(s)
	if err != nil {
		return s
	}
	return u
}

func unescapeKey(segs []string) string {
	for i, s := range segs {
		segs[i] = unescape(s)
	}
	return strings.Join(segs, "/")
}

func (f *Fake) serve(w http.ResponseWriter, r *http.Request) {
	rt := parse(r)
	fault, faulted := f.count(rt.endpoint, r)
	if faulted {
		if fault.Hang {
			select {
			case <-r.Context().Done():
			case <-f.closing:
			}
			return
		}
		for k, vs := range fault.Header {
			w.Header()[k] = vs
		}
		fail(w, fault.Status, fault.Code, "%s", fault.Message)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+f.cfg.Token {
		fail(w, http.StatusUnauthorized, CodeAuth, "Authentication error")
		return
	}
	if rt.endpoint == Unknown {
		fail(w, http.StatusNotFound, CodeNoRoute, "No route for that URI")
		return
	}
	if rt.account != f.cfg.AccountID {
		fail(w, http.StatusForbidden, CodeAuth, "Authentication error")
		return
	}
	if rt.namespace != f.cfg.NamespaceID {
		fail(w, http.StatusNotFound, CodeNamespaceMissing, "namespace not found")
		return
	}
	switch rt.endpoint {
	case List:
		f.list(w, r)
	case Get:
		f.get(w, rt.key)
	case Metadata:
		f.metadata(w, rt.key)
	case Put:
		f.put(w, r, rt.key)
	case Delete:
		f.deleteOne(w, rt.key)
	case BulkPut:
		f.bulkPut(w, r)
	case BulkDelete:
		f.bulkDelete(w, r)
	case BulkGet:
		f.bulkGet(w, r)
	}
}

// count records the request and draws its fault, if any.
func (f *Fake) count(e Endpoint, r *http.Request) (Fault, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts[e]++
	f.total++
	if prefix := r.URL.Query().Get("prefix"); e == List && len(f.nextList[prefix]) > 0 {
		fl := f.nextList[prefix][0]
		f.nextList[prefix] = f.nextList[prefix][1:]
		f.faults.Next++
		return fl, true
	}
	if len(f.next) > 0 {
		fl := f.next[0]
		f.next = f.next[1:]
		f.faults.Next++
		return fl, true
	}
	if f.rates == (Rates{}) {
		return Fault{}, false
	}
	x := f.rng.Float64()
	switch {
	case x < f.rates.RateLimit:
		f.faults.RateLimit++
		return RateLimit(time.Second), true
	case x < f.rates.RateLimit+f.rates.ServerError:
		f.faults.ServerError++
		return ServerError(http.StatusServiceUnavailable), true
	case x < f.rates.RateLimit+f.rates.ServerError+f.rates.Hang:
		f.faults.Hang++
		return Hang(), true
	}
	return Fault{}, false
}

// checkKey returns why a key is refused, or "".
func checkKey(key string) (int, string) {
	switch {
	case key == "" || key == "." || key == "..":
		return CodeBadRequest, fmt.Sprintf("invalid key %q", key)
	case len(key) > MaxKeyBytes:
		return CodeKeyTooLong, fmt.Sprintf("key of %d bytes exceeds %d", len(key), MaxKeyBytes)
	case !utf8.ValidString(key):
		return CodeBadRequest, "key is not valid UTF-8"
	}
	return 0, ""
}

// checkMetadata returns why metadata is refused, or "".
func checkMetadata(m json.RawMessage) (int, string) {
	if len(m) == 0 {
		return 0, ""
	}
	if !json.Valid(m) {
		return CodeBadRequest, "metadata is not valid JSON"
	}
	var b bytes.Buffer
	_ = json.Compact(&b, m)
	if b.Len() > MaxMetadataBytes {
		return CodeMetadataTooLarge, fmt.Sprintf("metadata of %d bytes exceeds %d", b.Len(), MaxMetadataBytes)
	}
	return 0, ""
}

// expiry returns when a key written now with these parameters expires.
func (f *Fake) expiry(expiration, ttl int64) (time.Time, int, string) {
	now := f.cfg.Now()
	switch {
	case ttl != 0:
		if ttl < MinTTLSeconds {
			return time.Time{}, CodeTTLTooShort, fmt.Sprintf("expiration_ttl %d is under %d", ttl, MinTTLSeconds)
		}
		return time.Unix(now.Unix()+ttl, 0).UTC(), 0, ""
	case expiration != 0:
		if expiration < now.Unix()+MinTTLSeconds {
			return time.Time{}, CodeTTLTooShort, fmt.Sprintf("expiration %d is less than %d seconds ahead", expiration, MinTTLSeconds)
		}
		return time.Unix(expiration, 0).UTC(), 0, ""
	}
	return time.Time{}, 0, ""
}

// compactMeta normalises stored metadata: none for absent or null.
func compactMeta(m json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(m)
	if len(t) == 0 || string(t) == "null" {
		return nil
	}
	var b bytes.Buffer
	_ = json.Compact(&b, t)
	return b.Bytes()
}

type listedKey struct {
	Name       string          `json:"name"`
	Expiration int64           `json:"expiration,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
}

func (f *Fake) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := MaxListLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < MinListLimit || n > MaxListLimit {
			fail(w, http.StatusBadRequest, CodeBadLimit, "limit must be between %d and %d", MinListLimit, MaxListLimit)
			return
		}
		limit = n
	}
	after := ""
	if c := q.Get("cursor"); c != "" {
		b, err := base64.RawURLEncoding.DecodeString(c)
		if err != nil {
			fail(w, http.StatusBadRequest, CodeBadRequest, "invalid cursor")
			return
		}
		after = string(b)
	}
	prefix := q.Get("prefix")
	f.mu.Lock()
	order := f.ordered()
	result := make([]listedKey, 0, min(limit, 64))
	more := false
	for _, k := range order[sort.SearchStrings(order, max(prefix, after)):] {
		if !strings.HasPrefix(k, prefix) {
			break
		}
		e, ok := f.live(k)
		if !ok || (after != "" && k <= after) {
			continue
		}
		if len(result) == limit {
			more = true
			break
		}
		lk := listedKey{Name: k, Metadata: e.metadata}
		if !e.exp.IsZero() {
			lk.Expiration = e.exp.Unix()
		}
		result = append(result, lk)
	}
	f.mu.Unlock()
	cursor := ""
	if more {
		cursor = base64.RawURLEncoding.EncodeToString([]byte(result[len(result)-1].Name))
	}
	writeEnvelope(w, http.StatusOK, result, &resultInfo{Count: len(result), Cursor: cursor})
}

// lookup finds a live key for get value and get metadata, answering the
// error itself (bad key, not found) when there is none.
func (f *Fake) lookup(w http.ResponseWriter, key string) (entry, bool) {
	if code, msg := checkKey(key); msg != "" {
		fail(w, http.StatusBadRequest, code, "%s", msg)
		return entry{}, false
	}
	f.mu.Lock()
	e, ok := f.live(key)
	f.mu.Unlock()
	if !ok {
		fail(w, http.StatusNotFound, CodeKeyNotFound, "get: 'key not found'")
	}
	return e, ok
}

func (f *Fake) get(w http.ResponseWriter, key string) {
	e, ok := f.lookup(w, key)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	if !e.exp.IsZero() {
		w.Header().Set("Expiration", strconv.FormatInt(e.exp.Unix(), 10))
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(e.value)
}

func (f *Fake) metadata(w http.ResponseWriter, key string) {
	e, ok := f.lookup(w, key)
	if !ok {
		return
	}
	var result any
	if e.metadata != nil {
		result = e.metadata
	}
	writeEnvelope(w, http.StatusOK, result, nil)
}

// put serves the single-key write: a raw body (cloudflare-go v0 sends
// application/octet-stream) or multipart/form-data with "value" and
// "metadata" fields (the current API).
func (f *Fake) put(w http.ResponseWriter, r *http.Request, key string) {
	if code, msg := checkKey(key); msg != "" {
		fail(w, http.StatusBadRequest, code, "%s", msg)
		return
	}
	var value []byte
	var meta json.RawMessage
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	body := http.MaxBytesReader(w, r.Body, MaxValueBytes+1<<20)
	if mt == "multipart/form-data" {
		r.Body = body
		if err := r.ParseMultipartForm(32 << 20); err != nil {
			fail(w, http.StatusBadRequest, CodeBadRequest, "invalid multipart body")
			return
		}
		value = []byte(r.FormValue("value"))
		meta = json.RawMessage(r.FormValue("metadata"))
	} else {
		b, err := io.ReadAll(body)
		if err != nil {
			fail(w, http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "value too large")
			return
		}
		value = b
	}
	if len(value) > MaxValueBytes {
		fail(w, http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "value of %d bytes exceeds %d", len(value), MaxValueBytes)
		return
	}
	if code, msg := checkMetadata(meta); msg != "" {
		fail(w, http.StatusBadRequest, code, "%s", msg)
		return
	}
	q := r.URL.Query()
	ttl, _ := strconv.ParseInt(q.Get("expiration_ttl"), 10, 64)
	exp, _ := strconv.ParseInt(q.Get("expiration"), 10, 64)
	at, code, msg := f.expiry(exp, ttl)
	if msg != "" {
		fail(w, http.StatusBadRequest, code, "%s", msg)
		return
	}
	f.mu.Lock()
	f.setData(key, entry{value: value, metadata: compactMeta(meta), exp: at})
	f.wrote(key)
	f.mu.Unlock()
	writeEnvelope(w, http.StatusOK, nil, nil)
}

func (f *Fake) deleteOne(w http.ResponseWriter, key string) {
	if code, msg := checkKey(key); msg != "" {
		fail(w, http.StatusBadRequest, code, "%s", msg)
		return
	}
	f.mu.Lock()
	f.deleteData(key)
	f.mu.Unlock()
	writeEnvelope(w, http.StatusOK, nil, nil)
}

// bulkPair is one element of a bulk write body.
type bulkPair struct {
	Key           string          `json:"key"`
	Value         string          `json:"value"`
	Metadata      json.RawMessage `json:"metadata"`
	Expiration    int64           `json:"expiration"`
	ExpirationTTL int64           `json:"expiration_ttl"`
	Base64        bool            `json:"base64"`
}

// bulkResult is the result of a bulk write or delete.
type bulkResult struct {
	SuccessfulKeyCount int      `json:"successful_key_count"`
	UnsuccessfulKeys   []string `json:"unsuccessful_keys"`
}

// readBulk reads a bulk body into v, refusing one over the bulk limit.
func (f *Fake) readBulk(w http.ResponseWriter, r *http.Request, v any) bool {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(f.cfg.MaxBulkBytes)))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		fail(w, http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "request body exceeds %d bytes", f.cfg.MaxBulkBytes)
		return false
	}
	if err != nil || json.Unmarshal(b, v) != nil {
		fail(w, http.StatusBadRequest, CodeBadRequest, "could not parse request body")
		return false
	}
	return true
}

// unsuccessful decides which keys of a bulk request fail; f.mu is held.
func (f *Fake) unsuccessful(key string) bool {
	if f.failKeys[key] || (f.failFraction > 0 && f.rng.Float64() < f.failFraction) {
		f.faults.UnsuccessfulKeys++
		return true
	}
	return false
}

func (f *Fake) bulkPut(w http.ResponseWriter, r *http.Request) {
	var pairs []bulkPair
	if !f.readBulk(w, r, &pairs) {
		return
	}
	if len(pairs) > MaxBulkPairs {
		fail(w, http.StatusBadRequest, CodeTooManyPairs, "%d pairs exceed %d", len(pairs), MaxBulkPairs)
		return
	}
	entries := make([]entry, len(pairs))
	for i, p := range pairs {
		if code, msg := checkKey(p.Key); msg != "" {
			fail(w, http.StatusBadRequest, code, "%s", msg)
			return
		}
		value := []byte(p.Value)
		if p.Base64 {
			b, err := base64.StdEncoding.DecodeString(p.Value)
			if err != nil {
				fail(w, http.StatusBadRequest, CodeBadRequest, "value of %q is not base64", p.Key)
				return
			}
			value = b
		}
		if len(value) > MaxValueBytes {
			fail(w, http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "value of %q exceeds %d bytes", p.Key, MaxValueBytes)
			return
		}
		if code, msg := checkMetadata(p.Metadata); msg != "" {
			fail(w, http.StatusBadRequest, code, "%s: %s", p.Key, msg)
			return
		}
		at, code, msg := f.expiry(p.Expiration, p.ExpirationTTL)
		if msg != "" {
			fail(w, http.StatusBadRequest, code, "%s: %s", p.Key, msg)
			return
		}
		entries[i] = entry{value: value, metadata: compactMeta(p.Metadata), exp: at}
	}
	res := bulkResult{UnsuccessfulKeys: []string{}}
	f.mu.Lock()
	for i, p := range pairs {
		if f.unsuccessful(p.Key) {
			res.UnsuccessfulKeys = append(res.UnsuccessfulKeys, p.Key)
			continue
		}
		f.setData(p.Key, entries[i])
		f.wrote(p.Key)
		res.SuccessfulKeyCount++
	}
	f.bulkPairs += res.SuccessfulKeyCount
	f.mu.Unlock()
	writeEnvelope(w, http.StatusOK, res, nil)
}

func (f *Fake) bulkDelete(w http.ResponseWriter, r *http.Request) {
	var keys []string
	if !f.readBulk(w, r, &keys) {
		return
	}
	if len(keys) > MaxBulkPairs {
		fail(w, http.StatusBadRequest, CodeTooManyPairs, "%d keys exceed %d", len(keys), MaxBulkPairs)
		return
	}
	for _, k := range keys {
		if code, msg := checkKey(k); msg != "" {
			fail(w, http.StatusBadRequest, code, "%s", msg)
			return
		}
	}
	res := bulkResult{UnsuccessfulKeys: []string{}}
	f.mu.Lock()
	for _, k := range keys {
		if f.unsuccessful(k) {
			res.UnsuccessfulKeys = append(res.UnsuccessfulKeys, k)
			continue
		}
		f.deleteData(k)
		res.SuccessfulKeyCount++
	}
	f.mu.Unlock()
	writeEnvelope(w, http.StatusOK, res, nil)
}
