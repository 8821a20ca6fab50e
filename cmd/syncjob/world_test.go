package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
)

// world is one repository on a fake GitHub and one registry (an embedded
// file, or a fake Cloudflare Workers KV namespace), driven through the whole
// program as a user would run it.
type world struct {
	t       testing.TB
	backend string // backendBolt or backendCloudflare
	repo    *githubtest.Repo
	gh      *githubtest.Server
	db      string
	cf      *cloudflaretest.Fake // nil on bolt
	// now is the world's clock: the program's, and the fake Cloudflare's (so
	// TTLs expire as runs go by). Each run advances it by an hour; the
	// injected backoff sleep advances it by what it waits. Read it through
	// clock() while a run may be in flight.
	now    time.Time
	env    map[string]string
	mu     sync.Mutex
	sleeps []time.Duration
	// stdin answers confirmations; stdinTerminal pretends it is a terminal
	stdin         io.Reader
	stdinTerminal bool
	// stdoutTerminal and stderrTerminal pretend those are terminals.
	stdoutTerminal, stderrTerminal bool
	// mirrorClient is the content mirror's HTTP client (a test S3 server's)
	mirrorClient *http.Client
}

// The registry backends a world can run on.
const (
	backendBolt       = "bolt"
	backendCloudflare = "cloudflare"
)

// The fake Cloudflare account of a world.
const (
	cfAccountID   = "0123456789abcdef0123456789abcdef"
	cfNamespaceID = "fedcba9876543210fedcba9876543210"
	cfToken       = "cfut_SECRETSECRETSECRET0123456789abcdefXYZ"
	cfSeed        = 20261125
)

// newWorld returns a world on the embedded registry file.
func newWorld(t testing.TB) *world { return newWorldOn(t, backendBolt) }

// newCloudflareWorld returns a world whose registry is a fake Cloudflare
// Workers KV namespace, configured through the CLOUDFLARE_* settings.
func newCloudflareWorld(t testing.TB) *world { return newWorldOn(t, backendCloudflare) }

func newWorldOn(t testing.TB, backend string) *world {
	t.Helper()
	repo := githubtest.NewRepo(t)
	w := &world{
		t:       t,
		backend: backend,
		repo:    repo,
		gh:      githubtest.NewServer(t, "knue", "policies", repo),
		db:      t.TempDir() + "/registry.db",
		now:     time.Date(2026, 11, 25, 16, 0, 0, 0, time.UTC),
	}
	w.env = map[string]string{
		"GITHUB_REPO":    "knue/policies",
		"GITHUB_BRANCH":  "main",
		"GITHUB_API_URL": w.gh.URL(),
		"REGISTRY_PATH":  w.db,
		"LOG_FORMAT":     "json",
	}
	switch backend {
	case backendBolt:
	case backendCloudflare:
		w.cf = cloudflaretest.New(cloudflaretest.Config{
			AccountID: cfAccountID, NamespaceID: cfNamespaceID, Token: cfToken,
			Now: w.clock, Seed: cfSeed,
		})
		t.Cleanup(w.cf.Close)
		w.env["CLOUDFLARE_ACCOUNT_ID"] = cfAccountID
		w.env["CLOUDFLARE_KV_NAMESPACE_ID"] = cfNamespaceID
		w.env["CLOUDFLARE_API_TOKEN"] = cfToken
		w.env["CLOUDFLARE_API_URL"] = w.cf.BaseURL()
		// REGISTRY_PATH stays set: with Cloudflare configured it must be ignored.
		t.Cleanup(func() {
			if _, err := os.Stat(w.db); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a Cloudflare run created the registry file %s (stat: %v)", w.db, err)
			}
		})
	default:
		t.Fatalf("unknown backend %q", backend)
	}
	return w
}

// forEachBackend runs f as the subtests "bolt" and "cloudflare", each in a
// fresh world on that registry backend.
func forEachBackend(t *testing.T, f func(t *testing.T, w *world)) {
	t.Helper()
	for _, b := range []string{backendBolt, backendCloudflare} {
		t.Run(b, func(t *testing.T) { f(t, newWorldOn(t, b)) })
	}
}

// clock reads the world's clock; safe while a run is in flight.
func (w *world) clock() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now
}

// watchCloudflare routes the program's Cloudflare requests through a proxy
// that calls see before passing each one on to the fake, so a test can arm
// the fake's faults at a chosen moment of a run (when the first write
// arrives, when the policy listing starts). The faults are still the fake's.
// see is called concurrently.
func (w *world) watchCloudflare(see func(r *http.Request)) {
	w.t.Helper()
	if w.cf == nil {
		w.t.Fatal("watchCloudflare on a world without Cloudflare")
	}
	target, err := url.Parse(w.cf.BaseURL())
	if err != nil {
		w.t.Fatal(err)
	}
	target.Path = "" // the proxied path keeps its /client/v4
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) }}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		see(r)
		proxy.ServeHTTP(rw, r)
	}))
	w.t.Cleanup(srv.Close)
	w.env["CLOUDFLARE_API_URL"] = srv.URL + cloudflaretest.BasePath
}

// result is one invocation of the program.
type result struct {
	code           int
	stdout, stderr string
}

// summaryLine returns the fields of the "run finished" log line.
func (r result) summaryLine(t testing.TB) map[string]any {
	t.Helper()
	for _, line := range strings.Split(r.stderr, "\n") {
		if !strings.Contains(line, `"run finished"`) {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("summary line is not JSON: %v\n%s", err, line)
		}
		return m
	}
	t.Fatalf("no summary line in:\n%s", r.stderr)
	return nil
}

// requests returns the requests per API of the summary line: GitHub's, and
// the registry's, which the summary names "registry" (bolt) or "cloudflare".
func (r result) requests(t testing.TB) (github, reg int) {
	t.Helper()
	line := r.summaryLine(t)
	req, ok := line["requests"].(map[string]any)
	if !ok {
		t.Fatalf("summary line has no requests: %v", line)
	}
	gh, ok := req["github"].(float64)
	if !ok {
		t.Fatalf("summary line has no github requests: %v", req)
	}
	var regs []float64
	for _, api := range []string{"registry", "cloudflare"} {
		if n, ok := req[api].(float64); ok {
			regs = append(regs, n)
		}
	}
	if len(regs) != 1 || len(req) != 2 {
		t.Fatalf("summary requests %v: want github and one of registry, cloudflare", req)
	}
	return int(gh), int(regs[0])
}

func (w *world) run(args ...string) result {
	w.t.Helper()
	var out, errb bytes.Buffer
	d := deps{
		stdin:         w.stdin,
		stdinTerminal: w.stdinTerminal,
		now:           w.clock,
		isTerminal: func(x io.Writer) bool {
			return (x == &out && w.stdoutTerminal) || (x == &errb && w.stderrTerminal)
		},
		httpClient: &githubHTTP{sleep: func(ctx context.Context, d time.Duration) error {
			w.mu.Lock() // blobs are read, and batches written, concurrently
			w.sleeps = append(w.sleeps, d)
			// Waiting takes time: a Retry-After pause of the Cloudflare
			// adapter ends only when its clock has moved past it.
			w.now = w.now.Add(d)
			w.mu.Unlock()
			return ctx.Err()
		}, mirror: w.mirrorClient},
	}
	code := runWith(context.Background(), args, func(k string) string { return w.env[k] }, &out, &errb, d)
	w.mu.Lock()
	w.now = w.now.Add(time.Hour)
	w.mu.Unlock()
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// sync runs "syncjob sync args..." and fails the test on an unexpected exit code.
func (w *world) sync(wantCode int, args ...string) result {
	w.t.Helper()
	r := w.run(append([]string{"sync"}, args...)...)
	if r.code != wantCode {
		w.t.Fatalf("sync %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, r.code, wantCode, r.stdout, r.stderr)
	}
	return r
}

// store opens the world's registry for inspection between runs: the
// registry file, or a cloudflare.Store on the fake (faults armed on the fake
// meet its requests too: clear them first).
func (w *world) store() registry.Store {
	w.t.Helper()
	if w.cf == nil {
		b, err := registry.OpenBolt(w.db, w.clock)
		if err != nil {
			w.t.Fatalf("open registry: %v", err)
		}
		return b
	}
	// Its own clock, moved by its own waits, so that reading never touches
	// the world's.
	var mu sync.Mutex
	now := w.clock()
	s, err := cloudflare.New(cloudflare.Config{
		AccountID: cfAccountID, NamespaceID: cfNamespaceID, APIToken: cfToken,
		BaseURL: w.cf.BaseURL(),
		Now: func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return now
		},
		Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			now = now.Add(d)
			mu.Unlock()
			return ctx.Err()
		},
	})
	if err != nil {
		w.t.Fatalf("open cloudflare store: %v", err)
	}
	return s
}

// open opens the registry for inspection between runs; the test closes it
// (the registry file admits one process at a time).
func (w *world) open() *registry.Registry {
	w.t.Helper()
	s := w.store()
	w.t.Cleanup(func() { _ = s.Close() })
	return registry.New(s)
}

// state reads everything a test may assert on, then closes the registry so
// the next run can open it.
type state struct {
	policies   map[string]policy.Entry
	queue      map[string]policy.QueueEntry
	lastCommit string
	lastRun    *policy.RunSummary
	keys       []string
}

func (w *world) state() state {
	w.t.Helper()
	st := w.store()
	defer st.Close()
	reg := registry.New(st)
	ctx := context.Background()
	var s state
	var problems map[string]error
	var err error
	if s.policies, problems, err = reg.Policies(ctx); err != nil || len(problems) > 0 {
		w.t.Fatalf("read policies: %v %v", err, problems)
	}
	if s.queue, err = reg.Queue(ctx); err != nil {
		w.t.Fatalf("read queue: %v", err)
	}
	if s.lastCommit, err = reg.LastCommit(ctx); err != nil {
		w.t.Fatalf("read last commit: %v", err)
	}
	if s.lastRun, err = reg.LastRun(ctx); err != nil {
		w.t.Fatalf("read last run: %v", err)
	}
	items, err := st.List(ctx, "")
	if err != nil {
		w.t.Fatalf("list: %v", err)
	}
	for _, it := range items {
		s.keys = append(s.keys, it.Key)
	}
	return s
}

// paths returns policyName → path of the registry.
func (s state) paths() map[string]string {
	out := map[string]string{}
	for n, e := range s.policies {
		out[n] = e.Path
	}
	return out
}

// titles returns policyName → title of the registry.
func (s state) titles() map[string]string {
	out := map[string]string{}
	for n, e := range s.policies {
		out[n] = e.Title
	}
	return out
}
