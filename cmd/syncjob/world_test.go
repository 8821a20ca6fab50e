package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/githubfake"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// world is one repository on a fake GitHub and one embedded registry file,
// driven through the whole program as a user would run it.
type world struct {
	t      testing.TB
	repo   *githubfake.Repo
	gh     *githubfake.Server
	db     string
	now    time.Time
	env    map[string]string
	mu     sync.Mutex
	sleeps []time.Duration
	// stdin answers confirmations; stdinTerminal pretends it is a terminal
	stdin         io.Reader
	stdinTerminal bool
}

func newWorld(t testing.TB) *world {
	t.Helper()
	repo := githubfake.NewRepo(t)
	w := &world{
		t:    t,
		repo: repo,
		gh:   githubfake.NewServer(t, "knue", "policies", repo),
		db:   t.TempDir() + "/registry.db",
		now:  time.Date(2026, 11, 25, 16, 0, 0, 0, time.UTC),
	}
	w.env = map[string]string{
		"GITHUB_REPO":    "knue/policies",
		"GITHUB_BRANCH":  "main",
		"GITHUB_API_URL": w.gh.URL(),
		"REGISTRY_PATH":  w.db,
		"LOG_FORMAT":     "json",
	}
	return w
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

// requests returns the requests per API of the summary line.
func (r result) requests(t testing.TB) (github, reg int) {
	t.Helper()
	req, ok := r.summaryLine(t)["requests"].(map[string]any)
	if !ok {
		t.Fatalf("summary line has no requests: %v", r.summaryLine(t))
	}
	return int(req["github"].(float64)), int(req["registry"].(float64))
}

func (w *world) run(args ...string) result {
	w.t.Helper()
	var out, errb bytes.Buffer
	d := deps{
		stdin:         w.stdin,
		stdinTerminal: w.stdinTerminal,
		now:           func() time.Time { return w.now },
		isTerminal:    func(io.Writer) bool { return false },
		httpClient: &githubHTTP{sleep: func(ctx context.Context, d time.Duration) error {
			w.mu.Lock() // blobs are read concurrently
			w.sleeps = append(w.sleeps, d)
			w.mu.Unlock()
			return ctx.Err()
		}},
	}
	code := runWith(context.Background(), args, func(k string) string { return w.env[k] }, &out, &errb, d)
	w.now = w.now.Add(time.Hour)
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

// open opens the registry file for inspection between runs.
func (w *world) open() *registry.Registry {
	w.t.Helper()
	b, err := registry.OpenBolt(w.db, func() time.Time { return w.now })
	if err != nil {
		w.t.Fatalf("open registry: %v", err)
	}
	w.t.Cleanup(func() { _ = b.Close() })
	return registry.New(b)
}

// state reads everything a test may assert on, then closes the file so the
// next run can open it.
type state struct {
	policies   map[string]policy.Entry
	queue      map[string]policy.QueueEntry
	lastCommit string
	lastRun    *policy.RunSummary
	keys       []string
}

func (w *world) state() state {
	w.t.Helper()
	b, err := registry.OpenBolt(w.db, func() time.Time { return w.now })
	if err != nil {
		w.t.Fatalf("open registry: %v", err)
	}
	defer b.Close()
	reg := registry.New(b)
	ctx := context.Background()
	var s state
	var problems map[string]error
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
	items, err := b.List(ctx, "")
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
