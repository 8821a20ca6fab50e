package cloudflare_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
	"github.com/knue/syncjob/internal/registry/registrytest"
)

const secretToken = "cf-secret-token-8f3a"

// world is a Store over a fake, sharing one clock; Sleep advances the clock
// and records every wait.
type world struct {
	fake  *cloudflaretest.Fake
	store *cloudflare.Store
	clock *registrytest.Clock
	logs  *syncBuffer

	mu    sync.Mutex
	slept []time.Duration
}

func (w *world) sleeps() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.slept...)
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// mustWorld starts a fake and a Store over it; tweak adjusts the Config.
func mustWorld(t testing.TB, now func() time.Time, tweak func(*cloudflare.Config)) *world {
	t.Helper()
	clock := registrytest.NewClock(registrytest.Epoch)
	if now == nil {
		now = clock.Now
	}
	w := &world{clock: clock, logs: &syncBuffer{}}
	var limits cloudflare.Config // the fake enforces the bulk limit the store is given
	if tweak != nil {
		tweak(&limits)
	}
	w.fake = cloudflaretest.New(cloudflaretest.Config{AccountID: "acc-1", NamespaceID: "ns-1", Token: secretToken, Now: now, Seed: 7, MaxBulkBytes: limits.MaxBulkBytes})
	t.Cleanup(w.fake.Close)
	cfg := cloudflare.Config{
		AccountID:   "acc-1",
		NamespaceID: "ns-1",
		APIToken:    secretToken,
		BaseURL:     w.fake.BaseURL(),
		HTTPClient:  w.fake.Client(),
		Now:         now,
		Rand:        rand.New(rand.NewPCG(1, 2)),
		Sleep: func(ctx context.Context, d time.Duration) error {
			w.mu.Lock()
			w.slept = append(w.slept, d)
			w.mu.Unlock()
			clock.Advance(d)
			return ctx.Err()
		},
		RequestTimeout: 10 * time.Second,
		Logger:         slog.New(slog.NewJSONHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if tweak != nil {
		tweak(&cfg)
	}
	s, err := cloudflare.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	w.store = s
	return w
}

func TestStore_Contract(t *testing.T) {
	t.Parallel()
	registrytest.RunContract(t, func(t *testing.T, now func() time.Time) registry.Store {
		return mustWorld(t, now, nil).store
	})
}

func TestNew_MissingField_NamesItAndIsConfigError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  cloudflare.Config
		want string
	}{
		{cloudflare.Config{NamespaceID: "n", APIToken: "t"}, "AccountID"},
		{cloudflare.Config{AccountID: "a", APIToken: "t"}, "NamespaceID"},
		{cloudflare.Config{AccountID: "a", NamespaceID: "n"}, "APIToken"},
		{cloudflare.Config{AccountID: "a", NamespaceID: "n", APIToken: "t", BaseURL: "ftp://x"}, "BaseURL"},
	} {
		_, err := cloudflare.New(tc.cfg)
		if !errors.Is(err, policy.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): err = %v, want a config error naming %s", tc.cfg, err, tc.want)
		}
	}
}

func TestStore_List_PagesByThousand_NoValues(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, nil)
	var want []string
	for i := range 2500 {
		k := "policy:" + strings.Repeat("가", i%3) + string(rune('a'+i%26)) + "-" + itoa(i)
		w.fake.Set(k, []byte("v"), json.RawMessage(`{"sha":"`+itoa(i)+`"}`), 0)
		want = append(want, k)
	}
	w.fake.Set("queue:x", []byte("q"), nil, 0)
	w.fake.ResetCounts()
	items := registrytest.MustList(t, w.store, "policy:")
	if got := w.fake.Requests(cloudflaretest.List); got != 3 {
		t.Errorf("list requests for 2,500 keys = %d, want 3", got)
	}
	if len(items) != len(want) {
		t.Fatalf("List = %d items, want %d", len(items), len(want))
	}
	for _, it := range items {
		if it.Value != nil {
			t.Fatalf("item %q has a value; a listing carries none", it.Key)
		}
		if len(it.Metadata) == 0 {
			t.Fatalf("item %q has no metadata", it.Key)
		}
	}
	if got := w.store.Usage().Requests; got != 3 {
		t.Errorf("Requests = %d, want 3", got)
	}
}

func TestStore_Put_OnePairWithMetadata_OneBulkRequest(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, nil)
	registrytest.MustPut(t, w.store, registry.Pair{Key: "policy:학칙", Value: []byte(`{"x":1}`), Metadata: json.RawMessage(`{"sha":"abc"}`)})
	if got := w.fake.Requests(cloudflaretest.BulkPut); got != 1 {
		t.Errorf("bulk writes = %d, want 1", got)
	}
	if got := w.fake.Requests(cloudflaretest.Put); got != 0 {
		t.Errorf("single-key writes = %d, want 0", got)
	}
	_, meta, ok := w.fake.Value("policy:학칙")
	if !ok || string(meta) != `{"sha":"abc"}` {
		t.Errorf("stored metadata = %s (ok %v), want {\"sha\":\"abc\"}", meta, ok)
	}
	if got := w.store.Usage().Writes; got != 1 {
		t.Errorf("Writes = %d, want 1", got)
	}
}

func TestStore_Put_BinaryValue_Base64RoundTrip(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, nil)
	bin := []byte{0xff, 0xfe, 0, 1, 'a', 0x80}
	text := []byte("한국 \u2028 <&> \"q\"")
	registrytest.MustPut(t, w.store, registry.Pair{Key: "bin", Value: bin}, registry.Pair{Key: "text", Value: text})
	for k, want := range map[string][]byte{"bin": bin, "text": text} {
		if got := registrytest.MustGet(t, w.store, k); !bytes.Equal(got, want) {
			t.Errorf("Get %s = %q, want %q", k, got, want)
		}
	}
}

func TestStore_Put_Over10000Pairs_SplitsIntoBulkRequests(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, nil)
	pairs := make([]registry.Pair, 10001)
	for i := range pairs {
		pairs[i] = registry.Pair{Key: "policy:" + itoa(i), Value: []byte("v")}
	}
	registrytest.MustPut(t, w.store, pairs...)
	if got := w.fake.Requests(cloudflaretest.BulkPut); got != 2 {
		t.Errorf("bulk writes for 10,001 pairs = %d, want 2", got)
	}
	if got := len(w.fake.Keys()); got != 10001 {
		t.Errorf("stored %d keys, want 10001", got)
	}
	if got := w.store.Usage().Writes; got != 10001 {
		t.Errorf("Writes = %d, want 10001", got)
	}
}

func TestStore_Put_OverTheBulkByteLimit_SplitsIntoBulkRequests(t *testing.T) {
	t.Parallel()
	// Cloudflare's limit is 100 MB a body (TestChunk_At100MB, below, splits
	// at it); sending 120 MB through the fake under -race takes half a
	// minute, so this store and its fake both take 1 MB, and six values of
	// 200 KB make two bodies, as six of 20 MB do at the real limit.
	const limit = 1_000_000
	w := mustWorld(t, nil, func(c *cloudflare.Config) { c.MaxBulkBytes = limit })
	big := bytes.Repeat([]byte("x"), limit/5)
	var pairs []registry.Pair
	for i := range 6 {
		pairs = append(pairs, registry.Pair{Key: "big:" + itoa(i), Value: big})
	}
	registrytest.MustPut(t, w.store, pairs...)
	if got := w.fake.Requests(cloudflaretest.BulkPut); got != 2 {
		t.Errorf("bulk writes for 1.2 MB at a 1 MB limit = %d, want 2", got)
	}
	if got := len(w.fake.Keys()); got != 6 {
		t.Errorf("stored %d keys, want 6", got)
	}
}

func TestStore_Put_UnsuccessfulKeys_FailExactlyThose(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, nil)
	w.fake.FailKeys("policy:b", "queue:b")
	out := w.store.Put(t.Context(), []registry.Pair{
		{Key: "policy:a", Value: []byte("a")},
		{Key: "policy:b", Value: []byte("b")},
		{Key: "queue:b", Value: []byte("qb")},
		{Key: "policy:c", Value: []byte("c")},
	})
	if diff := cmp.Diff([]string{"policy:b", "queue:b"}, sortedKeys(out)); diff != "" {
		t.Errorf("failed keys (-want +got):\n%s", diff)
	}
	for k, err := range out {
		if !errors.Is(err, cloudflare.ErrUnsuccessful) {
			t.Errorf("%s: err = %v, want ErrUnsuccessful", k, err)
		}
	}
	if diff := cmp.Diff([]string{"policy:a", "policy:c"}, w.fake.Keys()); diff != "" {
		t.Errorf("stored (-want +got):\n%s", diff)
	}
	if got := w.store.Usage().Writes; got != 2 {
		t.Errorf("Writes = %d, want 2 (unsuccessful keys are not billed writes)", got)
	}
}

func TestStore_Delete_UnsuccessfulKeys_FailExactlyThose(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, nil)
	for _, k := range []string{"policy:a", "policy:b", "queue:a"} {
		w.fake.Set(k, []byte("v"), nil, 0)
	}
	w.fake.FailKeys("policy:b")
	out := w.store.Delete(t.Context(), []string{"policy:a", "policy:b", "queue:a"})
	if diff := cmp.Diff([]string{"policy:b"}, sortedKeys(out)); diff != "" {
		t.Errorf("failed keys (-want +got):\n%s", diff)
	}
	if !errors.Is(out["policy:b"], cloudflare.ErrUnsuccessful) {
		t.Errorf("err = %v, want ErrUnsuccessful", out["policy:b"])
	}
	if diff := cmp.Diff([]string{"policy:b"}, w.fake.Keys()); diff != "" {
		t.Errorf("stored (-want +got):\n%s", diff)
	}
	if got := w.fake.Requests(cloudflaretest.BulkDelete); got != 4 {
		t.Errorf("bulk deletes = %d, want 4 (policy:b re-sent three times)", got)
	}
	if got, writes := w.store.Usage().Deletes, w.store.Usage().Writes; got != 2 || writes != 0 {
		t.Errorf("Deletes, Writes = %d, %d; want 2, 0", got, writes)
	}
}

func TestStore_429_RetriesHonouringRetryAfter(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, nil)
	w.fake.FailNext(cloudflaretest.RateLimit(7*time.Second), cloudflaretest.RateLimit(7*time.Second))
	registrytest.MustPut(t, w.store, registry.Pair{Key: "policy:a", Value: []byte("a")})
	if got := w.store.Usage().Requests; got != 3 {
		t.Errorf("Requests = %d, want 3 (two 429s, then the write)", got)
	}
	for _, d := range w.sleeps() {
		if d < 7*time.Second || d > 7*time.Second+700*time.Millisecond {
			t.Errorf("waited %s, want Retry-After 7s plus at most a tenth", d)
		}
	}
	if got := len(w.sleeps()); got < 2 {
		t.Errorf("waits = %d, want at least 2", got)
	}
}

func TestStore_5xxThenSuccess_Retried(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, nil)
	w.fake.Set("policy:a", []byte("a"), nil, 0)
	w.fake.FailNext(cloudflaretest.ServerError(502), cloudflaretest.ServerError(503), cloudflaretest.ServerError(500))
	if got := string(registrytest.MustGet(t, w.store, "policy:a")); got != "a" {
		t.Errorf("Get = %q, want a", got)
	}
	slept := w.sleeps()
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
	if len(slept) != len(want) {
		t.Fatalf("waits = %v, want 3", slept)
	}
	for i, d := range slept {
		if d < want[i]/2 || d > want[i] {
			t.Errorf("wait %d = %s, want in [%s, %s] (jittered backoff)", i, d, want[i]/2, want[i])
		}
	}
}

func TestStore_Hang_TimesOutAndRetries(t *testing.T) {
	t.Parallel()
	// the hang waits the timeout out; an answered try must not, even on a busy machine
	w := mustWorld(t, nil, func(c *cloudflare.Config) { c.RequestTimeout = time.Second })
	w.fake.FailNext(cloudflaretest.Hang())
	registrytest.MustPut(t, w.store, registry.Pair{Key: "policy:a", Value: []byte("a")})
	if got := w.fake.Requests(cloudflaretest.BulkPut); got != 2 {
		t.Errorf("bulk writes = %d, want 2 (one hung, one retried)", got)
	}
}

func TestStore_429Storm_RateLimitErrorAfterBoundedTries(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, func(c *cloudflare.Config) { c.MaxRetries = 3 })
	storm := make([]cloudflaretest.Fault, 10)
	for i := range storm {
		storm[i] = cloudflaretest.RateLimit(30 * time.Second)
	}
	w.fake.FailNext(storm...)
	out := w.store.Put(t.Context(), []registry.Pair{{Key: "policy:a", Value: []byte("a")}, {Key: "queue:a", Value: []byte("q")}})
	err := out["policy:a"]
	var rl *policy.RateLimitError
	if !errors.As(err, &rl) || !errors.Is(err, policy.ErrRateLimited) || rl.API != "cloudflare" {
		t.Fatalf("err = %v, want a cloudflare *policy.RateLimitError", err)
	}
	if rl.RetryAt.IsZero() {
		t.Errorf("RetryAt is zero, want Retry-After from the answer")
	}
	if !strings.HasPrefix(err.Error(), "cloudflare: bulk write 2 keys: ") {
		t.Errorf("err = %q, want it to start with \"cloudflare: bulk write 2 keys: \"", err)
	}
	if got := w.fake.Requests(cloudflaretest.BulkPut); got != 4 {
		t.Errorf("bulk writes = %d, want 4 (1 + MaxRetries)", got)
	}
	if len(w.fake.Keys()) != 0 {
		t.Errorf("stored %v, want nothing", w.fake.Keys())
	}
}

func TestStore_5xxOnList_ErrorNoRetryForever(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, func(c *cloudflare.Config) { c.MaxRetries = 2 })
	w.fake.SetRates(cloudflaretest.Rates{ServerError: 1})
	_, err := w.store.List(t.Context(), "policy:")
	if err == nil || !strings.Contains(err.Error(), "503") || errors.Is(err, policy.ErrRateLimited) {
		t.Fatalf("List: err = %v, want a 503 error", err)
	}
	if got := w.store.Usage().Requests; got != 3 {
		t.Errorf("Requests = %d, want 3", got)
	}
}

func TestStore_WrongToken_ConfigErrorWithoutToken(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, func(c *cloudflare.Config) { c.APIToken = "wrong-" + secretToken })
	_, err := w.store.Get(t.Context(), "policy:a")
	if !errors.Is(err, policy.ErrConfig) {
		t.Fatalf("Get with a wrong token: err = %v, want policy.ErrConfig", err)
	}
	out := w.store.Put(t.Context(), []registry.Pair{{Key: "policy:a", Value: []byte("a")}})
	if !errors.Is(out["policy:a"], policy.ErrConfig) {
		t.Errorf("Put: err = %v, want policy.ErrConfig", out["policy:a"])
	}
	for _, msg := range []string{err.Error(), out["policy:a"].Error(), w.logs.String()} {
		if strings.Contains(msg, secretToken) {
			t.Errorf("the token appears in %q", msg)
		}
	}
	if got := w.store.Usage().Requests; got != 2 {
		t.Errorf("Requests = %d, want 2 (a refused token is not retried)", got)
	}
}

func TestStore_UnknownNamespace_ConfigErrorNamingIt(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, func(c *cloudflare.Config) { c.NamespaceID = "ns-missing" })
	for name, err := range map[string]error{
		"get":  func() error { _, err := w.store.Get(t.Context(), "policy:a"); return err }(),
		"list": func() error { _, err := w.store.List(t.Context(), "policy:"); return err }(),
		"put":  w.store.Put(t.Context(), []registry.Pair{{Key: "policy:a", Value: []byte("a")}})["policy:a"],
		"del":  w.store.Delete(t.Context(), []string{"policy:a"})["policy:a"],
	} {
		if !errors.Is(err, policy.ErrConfig) || !strings.Contains(err.Error(), "ns-missing") || errors.Is(err, policy.ErrNotFound) {
			t.Errorf("%s: err = %v, want policy.ErrConfig naming ns-missing", name, err)
		}
	}
}

func TestStore_TokenNeverInErrorsOrLogs(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, func(c *cloudflare.Config) {
		c.MaxRetries = 2
		c.RequestTimeout = 200 * time.Millisecond
	})
	w.fake.SetRates(cloudflaretest.Rates{RateLimit: 0.4, ServerError: 0.3, Hang: 0.1})
	var msgs []string
	for i := range 10 {
		if out := w.store.Put(t.Context(), []registry.Pair{{Key: "policy:" + itoa(i), Value: []byte("v")}}); out != nil {
			msgs = append(msgs, out["policy:"+itoa(i)].Error())
		}
		if _, err := w.store.Get(t.Context(), "policy:"+itoa(i)); err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	if len(msgs) == 0 {
		t.Fatal("no errors at all; the fault rates should have produced some")
	}
	msgs = append(msgs, w.logs.String())
	for _, m := range msgs {
		if strings.Contains(m, secretToken) {
			t.Errorf("the token appears in %q", m)
		}
	}
	if !strings.Contains(w.logs.String(), "retrying cloudflare request") {
		t.Errorf("logs do not say a request was retried:\n%s", w.logs.String())
	}
}

func TestStore_FullWindow_WaitsAndSaysSo(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, func(c *cloudflare.Config) {
		c.RequestsPerWindow = 3
		c.Window = time.Minute
	})
	w.fake.Set("k", []byte("v"), nil, 0)
	for range 4 {
		registrytest.MustGet(t, w.store, "k")
	}
	if diff := cmp.Diff([]time.Duration{time.Minute}, w.sleeps()); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	if !strings.Contains(w.logs.String(), `"msg":"waiting for the cloudflare rate window","component":"cloudflare","wait":"1m0s"`) {
		t.Errorf("logs do not say the run waits for the window:\n%s", w.logs.String())
	}
	if got := w.store.Usage().Requests; got != 4 {
		t.Errorf("Requests = %d, want 4", got)
	}
}

func TestStore_Window_Slides(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, func(c *cloudflare.Config) {
		c.RequestsPerWindow = 2
		c.Window = time.Minute
	})
	w.fake.Set("k", []byte("v"), nil, 0)
	registrytest.MustGet(t, w.store, "k")
	w.clock.Advance(40 * time.Second)
	registrytest.MustGet(t, w.store, "k")
	registrytest.MustGet(t, w.store, "k") // the first leaves the window 20s later
	if diff := cmp.Diff([]time.Duration{20 * time.Second}, w.sleeps()); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
}

func TestStore_CancelledDuringBackoff_StopsWithContextError(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, func(c *cloudflare.Config) {
		c.Sleep = func(ctx context.Context, d time.Duration) error { return context.Canceled }
	})
	w.fake.FailNext(cloudflaretest.ServerError(500))
	_, err := w.store.List(t.Context(), "")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("List: err = %v, want context.Canceled", err)
	}
}

func TestStore_OddKeys_EveryEndpointExact(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, nil)
	var pairs []registry.Pair
	for _, k := range registrytest.OddKeys {
		pairs = append(pairs, registry.Pair{Key: k, Value: []byte("v:" + k), Metadata: json.RawMessage(`{"k":` + string(mustJSON(t, k)) + `}`)})
	}
	registrytest.MustPut(t, w.store, pairs...)
	want := append([]string(nil), registrytest.OddKeys...)
	sortStrings(want)
	if diff := cmp.Diff(want, w.fake.Keys()); diff != "" {
		t.Errorf("keys as the fake stored them (-want +got):\n%s", diff)
	}
	items := registrytest.MustList(t, w.store, "")
	for _, it := range items {
		var m struct{ K string }
		if err := json.Unmarshal(it.Metadata, &m); err != nil || m.K != it.Key {
			t.Errorf("listed metadata of %q = %s", it.Key, it.Metadata)
		}
		if got := string(registrytest.MustGet(t, w.store, it.Key)); got != "v:"+it.Key {
			t.Errorf("Get %q = %q", it.Key, got)
		}
	}
	for _, k := range registrytest.OddKeys {
		items := registrytest.MustList(t, w.store, k)
		if len(items) == 0 || items[0].Key != k {
			t.Errorf("List(prefix %q) = %v, want it first", k, registrytest.Keys(items))
		}
	}
	if out := w.store.Delete(t.Context(), registrytest.OddKeys); out != nil {
		t.Fatalf("Delete: %v", out)
	}
	if got := w.fake.Keys(); len(got) != 0 {
		t.Errorf("left after Delete: %q", got)
	}
}

func TestStore_DefaultBaseURL(t *testing.T) {
	t.Parallel()
	if cloudflare.DefaultBaseURL != "https://api.cloudflare.com/client/v4" {
		t.Errorf("DefaultBaseURL = %q", cloudflare.DefaultBaseURL)
	}
	var seen string
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		seen = r.URL.String()
		return nil, errors.New("offline")
	})}
	s, err := cloudflare.New(cloudflare.Config{AccountID: "a", NamespaceID: "n", APIToken: "t", HTTPClient: client,
		Sleep: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = s.Get(t.Context(), "policy:학칙 a/b")
	if want := "https://api.cloudflare.com/client/v4/accounts/a/storage/kv/namespaces/n/values/policy:%ED%95%99%EC%B9%99%20a%2Fb"; seen != want {
		t.Errorf("URL = %s, want %s", seen, want)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// onPuts wraps the store's HTTP client so that its bulk writes (PUTs) go
// through put, which sends them on with next; other requests go as they
// are. The fake's limits (no HTTP client) are left alone.
func onPuts(put func(r *http.Request, next http.RoundTripper) (*http.Response, error)) func(*cloudflare.Config) {
	return func(c *cloudflare.Config) {
		if c.HTTPClient == nil {
			return // the fake's limits
		}
		next := c.HTTPClient.Transport
		c.HTTPClient = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method != http.MethodPut {
				return next.RoundTrip(r)
			}
			return put(r, next)
		})}
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sortedKeys(m map[string]error) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sortStrings(keys)
	return keys
}

// closingTransport counts the calls of CloseIdleConnections that reach it.
type closingTransport struct {
	http.RoundTripper
	closed atomic.Int32
}

func (c *closingTransport) CloseIdleConnections() { c.closed.Add(1) }

// TestStore_Close_ClosesTheIdleConnections: Close reaches the transport the
// store's client was given through the store's own wrapping transport (else
// a warm Lambda keeps the connections of a finished run for 90 s), once.
func TestStore_Close_ClosesTheIdleConnections(t *testing.T) {
	t.Parallel()
	base := &closingTransport{RoundTripper: roundTripFunc(func(*http.Request) (*http.Response, error) {
		return nil, errors.New("offline")
	})}
	s, err := cloudflare.New(cloudflare.Config{AccountID: "a", NamespaceID: "n", APIToken: "t", HTTPClient: &http.Client{Transport: base},
		Sleep: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	_ = s.Close()
	if n := base.closed.Load(); n != 1 {
		t.Errorf("the base transport's idle connections closed %d times, want once", n)
	}
}
