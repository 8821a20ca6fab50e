package syncer_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/github"
	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/mirror/mirrortest"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
	"github.com/knue/syncjob/internal/registry/registrytest"
	"github.com/knue/syncjob/internal/syncer"
)

// The soak test's rig: a syncer over the fake GitHub and one registry
// backend (memory behind registrytest.Faulty, or cloudflare.Store over the
// cloudflaretest fake), the faults of one run, the kill switch, counters.

type killVerdict int

const (
	killPass         killVerdict = iota // send as asked
	killRefuse                          // the process is dead: nothing goes out
	killLandThenLose                    // the write lands, the process dies before it hears so
	killLandDetached                    // the write was on the wire when the context was cancelled: it lands
)

var errKilled = errors.New("soak: process killed")

// killSwitch cancels a run's context at its nth write. A hard kill also
// fails every request from then on, the run's record included: the process
// died, nothing after the kill lands.
type killSwitch struct {
	mu        sync.Mutex
	at        int    // kill at the at-th write; 0: never
	atKey     string // or at the first write of this key (memory backend)
	hard      bool
	landFirst bool
	cancel    context.CancelFunc
	writes    int
	fired     bool
	dead      bool
}

func (k *killSwitch) arm(at int, hard, landFirst bool, cancel context.CancelFunc) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.at, k.hard, k.landFirst, k.cancel = at, hard, landFirst, cancel
	k.writes, k.fired, k.dead = 0, false, false
}

// armAtKey kills the process (hard) when the first write of key arrives,
// before it lands.
func (k *killSwitch) armAtKey(key string, cancel context.CancelFunc) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.at, k.atKey, k.hard, k.landFirst, k.cancel = 0, key, true, false, cancel
	k.writes, k.fired, k.dead = 0, false, false
}

// disarm ends the run's kill; it reports whether it fired.
func (k *killSwitch) disarm() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	fired := k.fired
	k.at, k.atKey, k.cancel, k.writes, k.fired, k.dead = 0, "", nil, 0, false, false
	return fired
}

// verdict decides the fate of one request; keys are a write's keys, when
// known (the memory backend).
func (k *killSwitch) verdict(write bool, keys []string) killVerdict {
	k.mu.Lock()
	if k.dead {
		k.mu.Unlock()
		return killRefuse
	}
	if !write || (k.at == 0 && k.atKey == "") {
		k.mu.Unlock()
		return killPass
	}
	k.writes++
	if (k.at == 0 || k.writes != k.at) && (k.atKey == "" || !slices.Contains(keys, k.atKey)) {
		k.mu.Unlock()
		return killPass
	}
	k.fired = true
	cancel := k.cancel
	v := killPass
	switch {
	case k.hard && k.landFirst:
		k.dead, v = true, killLandThenLose
	case k.hard:
		k.dead, v = true, killRefuse
	case k.landFirst:
		v = killLandDetached
	}
	k.mu.Unlock()
	cancel()
	return v
}

// killStore puts a kill switch in front of a Store (the memory backend).
type killStore struct {
	registry.Store
	ks      *killSwitch
	lagging bool // reads lag writes (registrytest.Lagging, under the faults)
}

// EventuallyConsistent says what the Lagging store under the faults says,
// which the wrappers would hide.
func (s *killStore) EventuallyConsistent() bool { return s.lagging }

// soakLags are how far a run's reads may lag the writes before it (memory
// backend): none, a fraction of a second, seconds, up to KV's consistency
// window, which the runs wait out when they cannot tell what to distrust.
var soakLags = []time.Duration{0, 0, 500 * time.Millisecond, 2 * time.Second, 5 * time.Second, 20 * time.Second, syncer.DefaultConsistencyWindow}

// setLag sets how far the next run's reads lag writes (memory backend).
func (r *soakRig) setLag(lag time.Duration) {
	if r.lag != nil {
		r.lag.SetLag(lag)
	}
}

func (s *killStore) Get(ctx context.Context, key string) ([]byte, error) {
	if s.ks.verdict(false, nil) == killRefuse {
		return nil, errKilled
	}
	return s.Store.Get(ctx, key)
}

func (s *killStore) List(ctx context.Context, prefix string) ([]registry.Item, error) {
	if s.ks.verdict(false, nil) == killRefuse {
		return nil, errKilled
	}
	return s.Store.List(ctx, prefix)
}

func (s *killStore) Put(ctx context.Context, pairs []registry.Pair) map[string]error {
	switch s.ks.verdict(true, registry.PairKeys(pairs)) {
	case killRefuse:
		return registry.FailAll(nil, registry.PairKeys(pairs), errKilled)
	case killLandThenLose:
		s.Store.Put(context.WithoutCancel(ctx), pairs)
		return registry.FailAll(nil, registry.PairKeys(pairs), errKilled)
	case killLandDetached:
		return s.Store.Put(context.WithoutCancel(ctx), pairs)
	}
	return s.Store.Put(ctx, pairs)
}

func (s *killStore) Delete(ctx context.Context, keys []string) map[string]error {
	switch s.ks.verdict(true, keys) {
	case killRefuse:
		return registry.FailAll(nil, keys, errKilled)
	case killLandThenLose:
		s.Store.Delete(context.WithoutCancel(ctx), keys)
		return registry.FailAll(nil, keys, errKilled)
	case killLandDetached:
		return s.Store.Delete(context.WithoutCancel(ctx), keys)
	}
	return s.Store.Delete(ctx, keys)
}

// killTransport puts a kill switch under the Cloudflare store's HTTP client:
// every request that is not a GET is a write.
type killTransport struct {
	base http.RoundTripper
	ks   *killSwitch
	// afterWrite, when set, is called after each write request returns.
	afterWrite func()
}

func (t *killTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.afterWrite != nil && req.Method != http.MethodGet {
		defer t.afterWrite()
	}
	switch t.ks.verdict(req.Method != http.MethodGet, nil) {
	case killRefuse:
		return nil, errKilled
	case killLandThenLose:
		if resp, err := t.base.RoundTrip(req.WithContext(context.WithoutCancel(req.Context()))); err == nil {
			resp.Body.Close()
		}
		return nil, errKilled
	case killLandDetached:
		return t.base.RoundTrip(req.WithContext(context.WithoutCancel(req.Context())))
	}
	return t.base.RoundTrip(req)
}

const (
	backendMemory     = "memory"
	backendCloudflare = "cloudflare"
	soakLeaseTTL      = 6 * time.Minute // cmd/syncjob's, on Cloudflare
)

type soakRig struct {
	t       testing.TB
	backend string
	repo    *githubtest.Repo
	gh      *githubtest.Server
	clock   *registrytest.Clock
	s       *syncer.Syncer
	reg     *registry.Registry
	kill    *killSwitch
	mem     *registry.Memory      // memory backend: the store under the faults
	lag     *registrytest.Lagging // memory backend: its reads lag its writes
	faulty  *registrytest.Faulty  // memory backend
	cf      *cloudflaretest.Fake  // cloudflare backend
	cfHTTP  *killTransport        // cloudflare backend: under the store's HTTP client
	mirror  *mirrortest.Memory    // -soak.mirror: the content mirror
	opt     syncer.Options        // every run's options, before the run's own
	cache   blobs
	// a key refused run after run (see runFaults.stuck)
	stuck     []string
	stuckRuns int
}

func newSoakRig(t testing.TB, backend string, seed uint64, repo *githubtest.Repo, gh *githubtest.Server, maxRetries int) *soakRig {
	t.Helper()
	r := &soakRig{t: t, backend: backend, repo: repo, gh: gh, kill: &killSwitch{}, cache: blobs{},
		clock: registrytest.NewClock(time.Date(2026, 11, 25, 16, 0, 0, 0, time.UTC))}
	// waits advance the clock instead of sleeping
	sleep := r.clock.Sleep
	src, err := github.New(github.Config{Owner: "knue", Repo: "policies", Branch: "main", BaseURL: gh.URL(), Sleep: sleep, Now: r.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	r.opt = syncer.Options{MaxFileSize: soakMaxFileSize, Concurrency: *soakConcurrency, ReconcileInterval: 24 * time.Hour, FirstSyncWindow: *soakWindow}
	var store registry.Store
	switch backend {
	case backendMemory:
		// A memory store whose reads lag its writes by what each run draws
		// (setLag), as Workers KV's may, under the faults.
		r.mem = registry.NewMemory(r.clock.Now)
		r.lag = registrytest.NewLagging(r.mem, r.clock.Now, 0)
		r.faulty = registrytest.NewFaulty(r.lag)
		store = &killStore{Store: r.faulty, ks: r.kill, lagging: true}
	case backendCloudflare:
		r.cf = cloudflaretest.New(cloudflaretest.Config{Now: r.clock.Now, Seed: seed})
		t.Cleanup(r.cf.Close)
		r.cfHTTP = &killTransport{base: r.cf.Client().Transport, ks: r.kill}
		store, err = cloudflare.New(cloudflare.Config{
			AccountID: "account", NamespaceID: "namespace", APIToken: "token", BaseURL: r.cf.BaseURL(),
			HTTPClient: &http.Client{Transport: r.cfHTTP},
			Now:        r.clock.Now, Sleep: sleep, Rand: rand.New(rand.NewPCG(seed, 0xcf)), MaxRetries: maxRetries,
		})
		if err != nil {
			t.Fatal(err)
		}
		r.opt.LeaseTTL = soakLeaseTTL
	default:
		t.Fatalf("unknown backend %q", backend)
	}
	r.reg = registry.New(store)
	n := 0
	r.s = &syncer.Syncer{Source: src, Registry: r.reg, Repo: "knue/policies", Branch: "main", Now: r.clock.Now,
		Sleep:    sleep, // waiting out the consistency window moves the clock, not the test
		NewRunID: func() string { n++; return fmt.Sprintf("%s-%04d", backend, n) }}
	if *soakMirror {
		r.mirror = mirrortest.NewMemory(prefix)
		r.s.Mirror, r.s.MirrorPrefix = r.mirror, prefix
	}
	return r
}

// snapshot reads every key of the registry, around the faults and the
// kill switch.
func (r *soakRig) snapshot() snapshot {
	r.t.Helper()
	raw := map[string]string{}
	if r.mem != nil {
		items, err := r.mem.List(context.Background(), "")
		if err != nil {
			r.t.Fatal(err)
		}
		for _, it := range items {
			raw[it.Key] = string(it.Value)
		}
	} else {
		for _, k := range r.cf.Keys() {
			if v, _, ok := r.cf.Value(k); ok {
				raw[k] = string(v)
			}
		}
	}
	return decodeSnapshot(raw)
}

func (r *soakRig) head(commit string) headView {
	return headOf(r.repo, commit, r.cache, r.opt.MaxFileSize)
}

// runFaults are the faults one run meets.
type runFaults struct {
	ghServerError float64 // 5xx on blob, tree, compare, archive link and archive
	ghSecondary   float64 // a secondary rate limit on any request
	// memory backend
	failKeys map[string]error
	failPut  int // the nth Put of the run fails as a whole; 0 none
	failList bool
	failGet  bool
	// cloudflare backend
	rates   cloudflaretest.Rates
	keyFrac float64
	// stuck are keys refused run after run (both backends), until
	// the run's dead letters take over
	stuck []string
	// the kill
	killAt          int
	hard, landFirst bool
}

func (f runFaults) String() string {
	var parts []string
	if f.ghServerError > 0 || f.ghSecondary > 0 {
		parts = append(parts, fmt.Sprintf("github 5xx %.2f secondary %.2f", f.ghServerError, f.ghSecondary))
	}
	if len(f.failKeys) > 0 {
		parts = append(parts, fmt.Sprintf("failing keys %v", slices.Sorted(maps.Keys(f.failKeys))))
	}
	if f.failPut > 0 {
		parts = append(parts, fmt.Sprintf("put #%d fails", f.failPut))
	}
	if f.failList {
		parts = append(parts, "list fails")
	}
	if f.failGet {
		parts = append(parts, "get fails")
	}
	if len(f.stuck) > 0 {
		parts = append(parts, fmt.Sprintf("stuck keys %v", f.stuck))
	}
	if f.rates != (cloudflaretest.Rates{}) || f.keyFrac > 0 {
		parts = append(parts, fmt.Sprintf("cloudflare 429 %.2f 5xx %.2f keys %.2f", f.rates.RateLimit, f.rates.ServerError, f.keyFrac))
	}
	if f.killAt > 0 {
		kind := "cancel"
		if f.hard {
			kind = "kill"
		}
		land := "before"
		if f.landFirst {
			land = "after"
		}
		parts = append(parts, fmt.Sprintf("%s at write #%d, %s it lands", kind, f.killAt, land))
	}
	if len(parts) == 0 {
		return "no faults"
	}
	return strings.Join(parts, ", ")
}

// drawFaults draws a run's faults. names are the policy names the run may
// touch (for the memory backend's failing keys).
func (r *soakRig) drawFaults(rng *rand.Rand, names []string) runFaults {
	var f runFaults
	if rng.Float64() < 0.15 {
		return f // a clean run now and then
	}
	f.ghServerError = pick(rng, []float64{0, 0.05, 0.2})
	if rng.Float64() < 0.08 {
		f.ghSecondary = 0.05
	}
	if r.stuckRuns == 0 && len(names) > 0 && rng.Float64() < 0.1 {
		// a key refused for days: its write fails run after run
		n := pick(rng, names)
		r.stuck = []string{pick(rng, []string{registry.PolicyKey(n), registry.QueueKey(n)})}
		r.stuckRuns = 3 + rng.IntN(3)
	}
	if r.stuckRuns > 0 {
		f.stuck = r.stuck
		r.stuckRuns--
	}
	switch r.backend {
	case backendMemory:
		frac := pick(rng, []float64{0, 0.05, 0.15})
		f.failKeys = map[string]error{}
		for _, n := range names {
			for _, k := range []string{registry.PolicyKey(n), registry.QueueKey(n)} {
				if rng.Float64() < frac {
					f.failKeys[k] = errors.New("injected key failure")
				}
			}
		}
		for _, k := range []string{registry.LastCommitKey, registry.LastRunKey} {
			if rng.Float64() < 0.05 {
				f.failKeys[k] = errors.New("injected metadata failure")
			}
		}
		if rng.Float64() < 0.15 {
			f.failPut = 1 + rng.IntN(4)
		}
		f.failList = rng.Float64() < 0.03
		f.failGet = rng.Float64() < 0.03
	case backendCloudflare:
		f.rates = cloudflaretest.Rates{RateLimit: pick(rng, []float64{0, 0.05, 0.1}), ServerError: pick(rng, []float64{0, 0.05, 0.1})}
		f.keyFrac = pick(rng, []float64{0, 0.15, 0.15})
	}
	if rng.Float64() < 0.3 {
		f.killAt = 1 + rng.IntN(6)
		f.hard = rng.IntN(2) == 0
		f.landFirst = rng.IntN(2) == 0
	}
	return f
}

// inject sets the run's faults (the kill is armed by the run itself).
func (r *soakRig) inject(f runFaults, seed uint64) {
	r.gh.ClearFaults()
	if f.ghServerError > 0 {
		for i, kind := range []string{githubtest.KindBlob, githubtest.KindTree, githubtest.KindCompare, githubtest.KindArchiveLink, githubtest.KindArchive} {
			r.gh.FailSeeded(kind, seed+uint64(i), f.ghServerError, githubtest.ServerError(http.StatusBadGateway))
		}
	}
	if f.ghSecondary > 0 {
		// Retry-After 0: go-github remembers a secondary limit's end in
		// real time and refuses requests until then; a longer wait would
		// make the test depend on the wall clock.
		r.gh.FailSeeded(githubtest.AnyKind, seed+99, f.ghSecondary, githubtest.SecondaryRateLimit(http.StatusForbidden, 0))
	}
	switch r.backend {
	case backendMemory:
		keys := maps.Clone(f.failKeys)
		for _, k := range f.stuck {
			if keys == nil {
				keys = map[string]error{}
			}
			keys[k] = errors.New("injected stuck key")
		}
		r.faulty.FailKeys(keys)
		if f.failPut > 0 {
			r.faulty.FailCall(registrytest.Put, r.faulty.Calls(registrytest.Put)+f.failPut, errors.New("injected batch failure"))
		}
		if f.failList {
			r.faulty.FailList(errors.New("injected list failure"))
		}
		if f.failGet {
			r.faulty.FailGet(errors.New("injected get failure"))
		}
	case backendCloudflare:
		r.cf.SetRates(f.rates)
		r.cf.FailKeyFraction(f.keyFrac)
		r.cf.FailKeys(f.stuck...)
	}
}

// clearFaults stops every fault. A FailCall not reached stays armed in
// Faulty, so it is pushed out of reach.
func (r *soakRig) clearFaults() {
	r.gh.ClearFaults()
	switch r.backend {
	case backendMemory:
		r.faulty.FailKeys(nil)
		r.faulty.FailList(nil)
		r.faulty.FailGet(nil)
	case backendCloudflare:
		r.cf.SetRates(cloudflaretest.Rates{})
		r.cf.FailKeyFraction(0)
		r.cf.FailKeys()
	}
}

// run makes one run under f; it returns what the run returned and whether
// the kill fired. A Faulty nth-call failure the run did not reach is
// disarmed by counting past it.
func (r *soakRig) run(f runFaults, opt syncer.Options, faultSeed uint64) (res syncer.Result, fired bool, err error) {
	r.inject(f, faultSeed)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	putsBefore := 0
	if r.faulty != nil {
		putsBefore = r.faulty.Calls(registrytest.Put)
	}
	if f.killAt > 0 {
		r.kill.arm(f.killAt, f.hard, f.landFirst, cancel)
	}
	res, err = r.s.Run(ctx, opt)
	fired = r.kill.disarm()
	r.clearFaults()
	if r.faulty != nil && f.failPut > 0 && r.faulty.Calls(registrytest.Put) < putsBefore+f.failPut {
		// not reached: disarm it by arming nothing at that call number
		r.faulty.FailCall(registrytest.Put, putsBefore+f.failPut, nil)
	}
	return res, fired, err
}

// releaseDeadLetters retries every dead letter by hand, as
// "syncjob deadletter retry --all" does.
func (r *soakRig) releaseDeadLetters() int {
	r.t.Helper()
	snap := r.snapshot()
	if _, err := r.reg.RetryDeadLetters(context.Background(), slices.Sorted(maps.Keys(snap.dead)), r.clock.Now()); err != nil {
		r.t.Fatalf("retry dead letters: %v", err)
	}
	return len(snap.dead)
}

type soakStats struct {
	mu           sync.Mutex
	runs         int
	exits        map[int]int
	modes        map[string]int
	faults       map[string]int
	cancels      int // armed soft cancels that fired
	kills        int // armed hard kills that fired
	leaseRefused int // runs refused because another (killed) run's lease held
	leaseWaits   int // clean runs refused by a killed run's lease: clock advanced past the TTL
	guardRetry   int // clean runs refused by the mass-delete guard: run again allowing it
	deadRelease  int // dead letters retried by hand before the last clean run
	violations   map[string]int
}

func newSoakStats() *soakStats {
	return &soakStats{exits: map[int]int{}, modes: map[string]int{}, faults: map[string]int{}, violations: map[string]int{}}
}

func (s *soakStats) add(f func(s *soakStats)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

func (s *soakStats) log(t testing.TB, what string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	t.Logf("%s: %d runs; exit codes %v; modes %v", what, s.runs, s.exits, s.modes)
	t.Logf("%s: faults injected %v; cancellations %d, kills %d (fired)", what, s.faults, s.cancels, s.kills)
	t.Logf("%s: runs refused by a killed run's lease %d; clean runs that waited a lease out %d, allowed past the mass-delete guard %d; dead letters retried by hand %d",
		what, s.leaseRefused, s.leaseWaits, s.guardRetry, s.deadRelease)
	total := 0
	for _, n := range s.violations {
		total += n
	}
	t.Logf("%s: invariant violations %d %v", what, total, s.violations)
}

// countFaults adds up the faults the fakes injected since the last count.
func (r *soakRig) countFaults(stats *soakStats, last *faultTally) {
	cur := faultTally{}
	for _, req := range r.gh.Log() {
		switch {
		case req.Status >= 500:
			cur.gh5xx++
		case req.Status == http.StatusForbidden:
			cur.ghSecondary++
		}
	}
	r.gh.ResetRequests()
	if r.faulty != nil {
		in := r.faulty.Injected()
		cur.memCalls, cur.memKeys = int(in.Calls), int(in.Keys)
	}
	if r.cf != nil {
		fc := r.cf.Faults()
		cur.cf429, cur.cf5xx, cur.cfKeys = fc.RateLimit, fc.ServerError, fc.UnsuccessfulKeys
	}
	stats.add(func(s *soakStats) {
		s.faults["github 5xx"] += cur.gh5xx
		s.faults["github secondary limit"] += cur.ghSecondary
		s.faults["memory failed calls"] += cur.memCalls - last.memCalls
		s.faults["memory failed keys"] += cur.memKeys - last.memKeys
		s.faults["cloudflare 429"] += cur.cf429 - last.cf429
		s.faults["cloudflare 5xx"] += cur.cf5xx - last.cf5xx
		s.faults["cloudflare unsuccessful keys"] += cur.cfKeys - last.cfKeys
	})
	cur.gh5xx, cur.ghSecondary = 0, 0
	*last = cur
}

type faultTally struct {
	gh5xx, ghSecondary   int
	memCalls, memKeys    int
	cf429, cf5xx, cfKeys int
}
