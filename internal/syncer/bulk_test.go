package syncer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/github"
	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
	"github.com/knue/syncjob/internal/registry/registrytest"
	"github.com/knue/syncjob/internal/syncer"
)

// cfRig is a syncer over a fake GitHub of n policies and the Cloudflare
// fake, through the real store, with every bulk write recorded as it
// landed. Waits (re-sends of unsuccessful keys, the rate window) advance
// the clock instead of sleeping.
type cfRig struct {
	t     *testing.T
	repo  *githubtest.Repo
	cf    *cloudflaretest.Fake
	gh    *githubtest.Server
	bulk  *bulkRecorder
	clock *registrytest.Clock
	s     *syncer.Syncer
	head  string
}

func newCFRig(t *testing.T, n int, store func(*cloudflare.Config)) *cfRig {
	t.Helper()
	r := &cfRig{t: t, repo: githubtest.NewRepo(t), clock: registrytest.NewClock(time.Date(2026, 11, 25, 16, 0, 0, 0, time.UTC))}
	for i := range n {
		r.repo.Write(fmt.Sprintf("규정/%02d/정책 %04d.md", i%7, i), fmt.Sprintf("# 정책 %d\n\n본문 %d\n", i, i))
	}
	r.head = r.repo.Commit("policies")
	r.gh = githubtest.NewServer(t, "knue", "policies", r.repo)
	sleep := r.clock.Sleep
	src, err := github.New(github.Config{Owner: "knue", Repo: "policies", Branch: "main", BaseURL: r.gh.URL(), Sleep: sleep, Now: r.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	r.cf = cloudflaretest.New(cloudflaretest.Config{Now: r.clock.Now, Seed: 7})
	t.Cleanup(r.cf.Close)
	r.bulk = &bulkRecorder{base: r.cf.Client().Transport}
	cfg := cloudflare.Config{
		AccountID: "account", NamespaceID: "namespace", APIToken: "token", BaseURL: r.cf.BaseURL(),
		HTTPClient: &http.Client{Transport: r.bulk}, Now: r.clock.Now, Sleep: sleep, Rand: rand.New(rand.NewPCG(7, 0xcf)),
	}
	if store != nil {
		store(&cfg)
	}
	st, err := cloudflare.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	r.s = &syncer.Syncer{Source: src, Registry: registry.New(st), Repo: "knue/policies", Branch: "main", Now: r.clock.Now,
		NewRunID: func() string { runs++; return fmt.Sprintf("run%03d", runs) }}
	return r
}

func (r *cfRig) run(ctx context.Context, opt syncer.Options) (syncer.Result, error) {
	r.t.Helper()
	res, err := r.s.Run(ctx, opt)
	r.clock.Advance(time.Hour)
	return res, err
}

// policyNames are the names of the rig's policies whose key is present.
func (r *cfRig) policyNames() []string {
	var out []string
	for _, k := range r.cf.Keys() {
		if name, ok := strings.CutPrefix(k, registry.PolicyPrefix); ok {
			out = append(out, name)
		}
	}
	return out
}

// lastRun is the registry's metadata:sync:lastRun.
func (r *cfRig) lastRun() policy.RunSummary {
	r.t.Helper()
	v, _, ok := r.cf.Value(registry.LastRunKey)
	var sum policy.RunSummary
	if !ok {
		r.t.Fatal("no lastRun")
	}
	if err := json.Unmarshal(v, &sum); err != nil {
		r.t.Fatal(err)
	}
	return sum
}

// bulkRecorder records, for every bulk write request, the keys that
// landed (those not listed in unsuccessful_keys of a successful answer),
// and when the request started and ended on one sequence, so that order
// between requests is exact even when they overlap.
type bulkRecorder struct {
	base http.RoundTripper
	// before and after, when set, are called before the nth bulk write
	// (from 1) is sent and after its answer is recorded
	before, after func(n int)
	mu            sync.Mutex
	seq           int
	sent          int
	reqs          []bulkReq
}

type bulkReq struct {
	start, end int
	landed     []string
}

func (b *bulkRecorder) tick() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	return b.seq
}

func (b *bulkRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPut || !strings.HasSuffix(req.URL.Path, "/bulk") {
		return b.base.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	var pairs []struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal(body, &pairs); err != nil {
		return nil, fmt.Errorf("bulk body: %w", err)
	}
	b.mu.Lock()
	b.sent++
	n := b.sent
	b.mu.Unlock()
	if b.before != nil {
		b.before(n)
	}
	if err := req.Context().Err(); err != nil {
		return nil, err // not sent: nothing lands that the record misses
	}
	start := b.tick()
	resp, err := b.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(answer))
	if err != nil {
		return nil, err
	}
	var env struct {
		Success bool `json:"success"`
		Result  struct {
			Unsuccessful []string `json:"unsuccessful_keys"`
		} `json:"result"`
	}
	_ = json.Unmarshal(answer, &env)
	failed := map[string]bool{}
	for _, k := range env.Result.Unsuccessful {
		failed[k] = true
	}
	var landed []string
	for _, p := range pairs {
		if env.Success && !failed[p.Key] {
			landed = append(landed, p.Key)
		}
	}
	end := b.tick()
	b.mu.Lock()
	b.reqs = append(b.reqs, bulkReq{start: start, end: end, landed: landed})
	b.mu.Unlock()
	if b.after != nil {
		b.after(n)
	}
	return resp, nil
}

// landings returns, per key, the requests that landed it.
func (b *bulkRecorder) landings() map[string][]bulkReq {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string][]bulkReq{}
	for _, q := range b.reqs {
		for _, k := range q.landed {
			out[k] = append(out[k], q)
		}
	}
	return out
}

// count is the number of bulk writes sent so far.
func (b *bulkRecorder) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sent
}

// requests is the number of bulk write requests answered.
func (b *bulkRecorder) requests() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.reqs)
}

// checkAnnouncedFirst fails t unless every policy: key that landed has
// its queue: key landed by a request that ended before the policy's
// request started.
func checkAnnouncedFirst(t *testing.T, landings map[string][]bulkReq) {
	t.Helper()
	for key, pubs := range landings {
		name, ok := strings.CutPrefix(key, registry.PolicyPrefix)
		if !ok {
			continue
		}
		anns := landings[registry.QueueKey(name)]
		if len(anns) == 0 {
			t.Errorf("%s landed without its announcement", key)
			continue
		}
		if anns[0].end > pubs[0].start {
			t.Errorf("%s: the announcement's request ended at %d, after the publication's began at %d", name, anns[0].end, pubs[0].start)
		}
	}
}

// TestBatchSize10000_UnsuccessfulKeysReSent_AnnouncedBeforePublished: at
// Cloudflare's bulk limit a first sync of a few hundred policies is one
// announce request and one publish request; keys Cloudflare reports
// unsuccessful are re-sent inside the run, every announcement lands before
// the publish request of its name starts, and a key refused every time
// fails only its policy, recorded for retry (partial).
func TestBatchSize10000_UnsuccessfulKeysReSent_AnnouncedBeforePublished(t *testing.T) {
	t.Parallel()
	const n = 100 // 200 keys and more: one request each phase at BATCH_SIZE 10000
	r := newCFRig(t, n, nil)
	r.cf.FailKeyFraction(0.05)
	r.cf.FailKeys(registry.PolicyKey("정책 0007"))
	res, err := r.run(context.Background(), syncer.Options{BatchSize: 10000})
	if !errors.Is(err, syncer.ErrPartial) || len(res.Summary.Failures) != 1 || res.Summary.Failures[0].PolicyName != "정책 0007" {
		t.Fatalf("err = %v, failures %+v; want partial naming 정책 0007 only", err, res.Summary.Failures)
	}
	if got := len(r.policyNames()); got != n-1 {
		t.Errorf("%d policies published, want %d (all but the refused one)", got, n-1)
	}
	checkAnnouncedFirst(t, r.bulk.landings())
	if f := r.cf.Faults(); f.UnsuccessfulKeys == 0 {
		t.Fatalf("no key was reported unsuccessful: the test proves nothing (%+v)", f)
	}
	// One request per phase, the re-sends of its unsuccessful keys, and the
	// lease and record writes: nowhere near one per 50 pairs.
	if got := r.bulk.requests(); got > 20 {
		t.Errorf("%d bulk write requests for %d policies at BATCH_SIZE 10000", got, n)
	}
	r.cf.FailKeyFraction(0)
	r.cf.FailKeys()
	if _, err := r.run(context.Background(), syncer.Options{BatchSize: 10000}); err != nil {
		t.Fatalf("the next run: %v", err)
	}
	if got := len(r.policyNames()); got != n {
		t.Errorf("after the retry: %d policies, want %d", got, n)
	}
	checkAnnouncedFirst(t, r.bulk.landings())
}

// TestBatchSize10000_DailyBudget_SpreadsTheFirstSync: the daily write
// budget holds whatever the batch size: a run writes what fits, however
// few requests it takes to write it.
func TestBatchSize10000_DailyBudget_SpreadsTheFirstSync(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for i := range 40 {
		r.repo.Write(fmt.Sprintf("a/정책 %03d.md", i), fmt.Sprintf("# 정책 %d\n", i))
	}
	r.repo.Commit("policies")
	billed := &billingStore{Store: r.store}
	r.s.Registry = registry.New(billed)
	// 5 writes record the run and 2 reserve its budget (budget.go); 2 each
	// policy: 47 leaves room for 20.
	opt := syncer.Options{DailyWriteBudget: 47, BatchSize: 10000}
	res, err := r.run(opt)
	if !errors.Is(err, syncer.ErrPartial) || res.Summary.Added != 20 || res.Summary.Waiting != 20 {
		t.Fatalf("err = %v, summary %+v; want 20 added, 20 waiting", err, res.Summary)
	}
	if res.Summary.BillableWrites > 47 || len(r.policies()) != 20 {
		t.Errorf("%d billable writes (budget 47), %d policies", res.Summary.BillableWrites, len(r.policies()))
	}
	r.clock.Advance(24 * time.Hour)
	res, err = r.run(opt)
	if err != nil || res.Summary.Added != 20 || res.Summary.BillableWrites > 47 || len(r.policies()) != 40 {
		t.Errorf("the next day: %v, %+v, %d policies", err, res.Summary, len(r.policies()))
	}
}
