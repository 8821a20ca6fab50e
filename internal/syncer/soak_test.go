package syncer_test

// Soak tests: seeded random histories (adds, edits, renames, moves, deletes,
// merges, force-pushes, empty and oversized files, duplicate names) synced
// into both registry backends — the memory store behind registrytest.Faulty,
// and cloudflare.Store over the cloudflaretest fake — while the fakes
// answer 5xx and 429, fail keys of bulk writes, and runs are cancelled or
// killed at their nth registry write. After every run the invariants of
// docs/design.md "Invariants" are checked (see checkRun); once the faults stop, one
// clean run must bring the registry to the head.
//
// Every fault is drawn from the seed, and batches are applied one at a time
// (-soak.concurrency=1), so a seed replays the same runs. Waits (backoff,
// Retry-After) advance a fake clock instead of sleeping.
//
// The memory backend's reads lag its writes by a delay each run draws (up to
// KV's consistency window, registrytest.Lagging), and the histories hold
// changes of mode only (chmod: GitHub's compare says modified, sha null).
//
// Default, short (part of go test ./...): 1 seed × 2 steps × 2 backends and
// a replay of 2 commits, about 3 s with -race. The long soak, over 1,000
// runs (20 seeds × 25 steps × 2 backends, a replay of 150 commits), some
// minutes (the flags belong to this package's test binary: name the package):
//
//	go test -run Soak ./internal/syncer -soak.long -timeout=60m -v
//
// Other sizes:
//
//	go test -race -run Soak ./internal/syncer -soak.seeds=100 -soak.steps=40 -timeout=30m
//	go test -run Soak_Random ./internal/syncer -soak.duration=10m -timeout=15m
//	go test -run Soak_Random ./internal/syncer -soak.duration=10m -soak.from=2000 -timeout=15m
//	go test -run Soak_Replay ./internal/syncer -soak.replay=300
//
// Reproduce a failure (the message names seed, backend, step and run):
//
//	go test -run 'Soak_Random/seed=7/cloudflare' ./internal/syncer -soak.seed=7 -soak.trace -v
//
// -soak.concurrency=4 applies batches concurrently as production does; the
// order of requests, and so the faults they meet, then varies between
// repetitions of a seed.

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
	"github.com/knue/syncjob/internal/syncer"
)

var (
	soakLong        = flag.Bool("soak.long", false, "soak: the long soak (20 seeds of 25 steps, over 1,000 runs; a 150-commit replay); the default run has a short one (1 seed of 2 steps, a 2-commit replay)")
	soakSeeds       = flag.Int("soak.seeds", 0, "soak: how many seeded histories, each synced into every backend (0: 1, or 20 with -soak.long)")
	soakSeed        = flag.Uint64("soak.seed", 0, "soak: run only this seed")
	soakFrom        = flag.Uint64("soak.from", 1, "soak: the first seed (seeds count up from it)")
	soakSteps       = flag.Int("soak.steps", 0, "soak: history steps per seed (0: 2, or 25 with -soak.long)")
	soakDuration    = flag.Duration("soak.duration", 0, "soak: keep starting new seeds until this much time has passed")
	soakBackend     = flag.String("soak.backend", "", "soak: memory or cloudflare (default: both)")
	soakConcurrency = flag.Int("soak.concurrency", 1, "soak: batches in flight (more than 1 is not reproducible by seed)")
	soakReplaySteps = flag.Int("soak.replay", 0, "soak: commits of the replayed history (0: 2, or 150 with -soak.long)")
	soakTrace       = flag.Bool("soak.trace", false, "soak: log every run")
	soakWindow      = flag.Int("soak.window", 0, "soak: Options.FirstSyncWindow (0: the default, 60,000); a few policies make every first sync one in windows")
	soakMirror      = flag.Bool("soak.mirror", false, "soak: every run also keeps a content mirror (in memory), whose invariants are checked too (checkMirror)")
)

func TestSoak_RandomHistoriesUnderFaults_InvariantsHoldAndCleanRunConverges(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("soak: not in -short")
	}
	stats := newSoakStats()
	start := time.Now()
	for i := 0; ; i++ {
		seed := *soakFrom + uint64(i)
		if *soakSeed != 0 {
			seed = *soakSeed
		}
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { soakOneSeed(t, seed, stats) })
		switch {
		case *soakSeed != 0:
		case *soakDuration > 0 && time.Since(start) < *soakDuration:
			continue
		case *soakDuration == 0 && i+1 < soakSize(*soakSeeds, 1, 20):
			continue
		}
		break
	}
	stats.log(t, "soak")
}

// soakSize is n when set, else the short soak's size or, with -soak.long,
// the long one's.
func soakSize(n, short, long int) int {
	switch {
	case n > 0:
		return n
	case *soakLong:
		return long
	}
	return short
}

func soakBackends() []string {
	if *soakBackend != "" {
		return []string{*soakBackend}
	}
	return []string{backendMemory, backendCloudflare}
}

// soakOneSeed generates one history and syncs it into each backend under
// faults, then cleanly.
func soakOneSeed(t *testing.T, seed uint64, stats *soakStats) {
	repo := githubtest.NewRepo(t)
	gh := githubtest.NewServer(t, "knue", "policies", repo)
	if seed%3 == 0 {
		gh.TruncateTreesOver = 15 // the tree must be walked folder by folder
	}
	steps := newHistorian(t, repo, seed).generate(soakSize(*soakSteps, 2, 25))
	for bi, backend := range soakBackends() {
		t.Run(backend, func(t *testing.T) {
			r := newSoakRig(t, backend, seed, repo, gh, 2)
			rng := rand.New(rand.NewPCG(seed, uint64(bi)+100))
			rep := &reporter{t: t, where: fmt.Sprintf("seed %d, %s", seed, backend), steps: steps, stats: stats}
			var tally faultTally
			gaps := []time.Duration{30 * time.Second, 3 * time.Minute, 20 * time.Minute, 2 * time.Hour, 2 * time.Hour, 30 * time.Hour}
			for _, st := range steps {
				pointMain(repo, st.Head)
				hv := r.head(st.Head)
				runs := 1
				if rng.Float64() < 0.25 {
					runs = 2 // a run on an unchanged head: retries only
				}
				for k := range runs {
					before := r.snapshot()
					touchable := maps.Clone(hv.names)
					for n := range before.policies {
						touchable[n] = true
					}
					f := r.drawFaults(rng, slices.Sorted(maps.Keys(touchable)))
					opt := r.opt
					opt.BatchSize = pick(rng, []int{3, 8, 50})
					opt.Full = rng.Float64() < 0.08
					opt.DryRun = rng.Float64() < 0.04
					r.setLag(pick(rng, soakLags))
					res, fired, err := r.run(f, opt, rng.Uint64())
					after := r.snapshot()
					r.countFaults(stats, &tally)
					stats.add(func(s *soakStats) {
						if fired && f.hard {
							s.kills++
						} else if fired {
							s.cancels++
						}
					})
					rep.check(st, fmt.Sprintf("run %d", k+1), f, opt, res, err, r.checkRun(hv, before, after, res, err, opt.DryRun))
					r.clock.Advance(pick(rng, gaps))
				}
			}
			r.converge(rep, steps[len(steps)-1])
		})
	}
}

// checkRun is checkRun, and checkMirror with -soak.mirror.
func (r *soakRig) checkRun(hv headView, before, after snapshot, res syncer.Result, err error, dry bool) []violation {
	vs := checkRun(hv, before, after, res, err, dry)
	if r.mirror != nil && !dry {
		vs = append(vs, checkMirror(after, r.mirror.Objects(), err == nil)...)
	}
	return vs
}

// converge stops the faults and makes one clean run, which must bring the
// registry to the head: only a dead letter may hold a version back, and
// once dead letters are retried by hand, one more clean run must converge.
// It starts soon after the last faulty run, so a killed run's lease may
// still hold: the clock is then moved past the lease, as an operator would.
func (r *soakRig) converge(rep *reporter, last histStep) {
	r.t.Helper()
	r.clearFaults()
	r.clock.Advance(30 * time.Second)
	hv := r.head(last.Head)
	opt := r.opt
	cleanRun := func(label string) (syncer.Result, snapshot, error) {
		for attempt := 1; ; attempt++ {
			before := r.snapshot()
			res, _, err := r.run(runFaults{}, opt, 0)
			after := r.snapshot()
			rep.check(last, label, runFaults{}, opt, res, err, r.checkRun(hv, before, after, res, err, false))
			switch {
			case attempt > 3:
			case errors.Is(err, registry.ErrLeaseHeld):
				rep.stats.add(func(s *soakStats) { s.leaseWaits++ })
				r.clock.Advance(soakLeaseTTL)
				continue
			case errors.Is(err, differ.ErrRefused) && !opt.AllowMassDelete:
				rep.stats.add(func(s *soakStats) { s.guardRetry++ })
				opt.AllowMassDelete = true
				continue
			}
			return res, after, err
		}
	}
	res, after, err := cleanRun("clean run")
	exp, got := expected(hv, after), views(after.policies)
	held := heldBack(hv, after, exp, got)
	for _, n := range held {
		delete(exp, n)
		delete(got, n)
	}
	diff := cmp.Diff(exp, got)
	if diff != "" || (err != nil && !(errors.Is(err, syncer.ErrPartial) && len(held) > 0)) || after.lastCommit != hv.commit {
		rep.verdict(last, "clean run", res, err, violation{vConverge,
			fmt.Sprintf("after one clean run: lastCommit %s (head %s), held back by dead letters %v; policies (-head +registry):\n%s",
				short(after.lastCommit), short(hv.commit), held, diff)})
	}
	if len(after.dead) == 0 {
		return
	}
	n := r.releaseDeadLetters()
	rep.stats.add(func(s *soakStats) { s.deadRelease += n })
	res, after, err = cleanRun("clean run after dead letters retried")
	if errors.Is(err, syncer.ErrPartial) && len(res.Summary.HeldBack) > 0 {
		// Within the consistency window of the retry a run may still read
		// the dead letters (and lastRun.pending) from before it, and holds
		// the versions back, saying so; the run after must find them gone.
		r.clock.Advance(syncer.DefaultConsistencyWindow)
		res, after, err = cleanRun("clean run a window after dead letters were retried")
	}
	if diff := cmp.Diff(expected(hv, after), views(after.policies)); diff != "" || err != nil || len(after.dead) > 0 || after.lastCommit != hv.commit {
		rep.verdict(last, "clean run after dead letters retried", res, err, violation{vConverge,
			fmt.Sprintf("after dead letters were retried: dead letters %v, lastCommit %s (head %s); policies (-head +registry):\n%s",
				slices.Sorted(maps.Keys(after.dead)), short(after.lastCommit), short(hv.commit), diff)})
	}
}

// reporter counts runs and reports violations: the first of each kind in
// full, with the history that led to it, the next few briefly.
type reporter struct {
	t     *testing.T
	where string
	steps []histStep
	stats *soakStats
	shown map[string]int
}

const shownPerKind = 3

// check counts a run and reports its violations.
func (rp *reporter) check(st histStep, run string, f runFaults, opt syncer.Options, res syncer.Result, err error, vs []violation) {
	rp.t.Helper()
	mode := res.Summary.Mode
	if mode == "" {
		mode = "aborted before planning"
	}
	if res.Plan.Omitted != nil {
		mode += " in windows" // a first sync in windows (-soak.window)
	}
	rp.stats.add(func(s *soakStats) {
		s.runs++
		s.exits[exitCode(err)]++
		s.modes[mode]++
		if errors.Is(err, registry.ErrLeaseHeld) {
			s.leaseRefused++
		}
	})
	if *soakTrace {
		detail := ""
		if e := res.Summary.Error; e != "" && (err == nil || !strings.Contains(err.Error(), e)) {
			detail = " (recorded: " + e + ")"
		}
		rp.t.Logf("%s step %d %s: %s | %s | batch %d full %v dry %v | mode %s, exit %d: %v%s",
			rp.where, st.N, run, st.Desc, f, opt.BatchSize, opt.Full, opt.DryRun, mode, exitCode(err), err, detail)
	}
	rp.report(st, run, f, opt, res, err, vs)
}

// verdict reports a violation found after the runs, not by one run.
func (rp *reporter) verdict(st histStep, what string, res syncer.Result, err error, v violation) {
	rp.t.Helper()
	rp.report(st, what, runFaults{}, syncer.Options{}, res, err, []violation{v})
}

func (rp *reporter) report(st histStep, run string, f runFaults, opt syncer.Options, res syncer.Result, err error, vs []violation) {
	rp.t.Helper()
	if rp.shown == nil {
		rp.shown = map[string]int{}
	}
	for _, v := range vs {
		rp.stats.add(func(s *soakStats) { s.violations[v.kind]++ })
		rp.shown[v.kind]++
		switch n := rp.shown[v.kind]; {
		case n == 1:
			var hist strings.Builder
			for _, s := range rp.steps[:st.N] {
				fmt.Fprintf(&hist, "\n    %2d %s %s", s.N, short(s.Head), s.Desc)
			}
			rp.t.Errorf("VIOLATION %s\n  at %s, step %d, %s (mode %s, status %s, exit %d: %v)\n  faults: %s\n  options: batch %d, full %v, dry run %v\n  %s\n  history:%s",
				v.kind, rp.where, st.N, run, res.Summary.Mode, res.Summary.Status, exitCode(err), err, f, opt.BatchSize, opt.Full, opt.DryRun, v.detail, hist.String())
		case n <= shownPerKind:
			rp.t.Errorf("VIOLATION %s at %s, step %d, %s (exit %d: %v; faults: %s): %s", v.kind, rp.where, st.N, run, exitCode(err), err, f, v.detail)
		}
	}
}

func TestSoak_ReplayUnderFaults_MostRunsExitSuccessOrPartial(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("soak: not in -short")
	}
	const seed = 2026
	repo := githubtest.NewRepo(t)
	gh := githubtest.NewServer(t, "knue", "policies", repo)
	steps := newHistorian(t, repo, seed).generate(soakSize(*soakReplaySteps, 2, 150))
	r := newSoakRig(t, backendCloudflare, seed, repo, gh, 0)
	replayUnderFaults(t, r, "replay", seed, steps)
}

// replayUnderFaults syncs each step of a history in order with production
// settings (retries, batches, reconcile interval) under 5% request faults
// (3% 503, 2% 429; 5% GitHub 5xx) and 15% per-key bulk failures, checking
// the invariants after each run; then one clean run must converge, and
// most runs must have exited 0 or 3.
func replayUnderFaults(t *testing.T, r *soakRig, where string, seed uint64, steps []histStep) {
	t.Helper()
	r.opt.ReconcileInterval = 0
	stats := newSoakStats()
	f := runFaults{ghServerError: 0.05, rates: cloudflaretest.Rates{ServerError: 0.03, RateLimit: 0.02}, keyFrac: 0.15}
	rep := &reporter{t: t, where: where, steps: steps, stats: stats}
	var tally faultTally
	for _, st := range steps {
		pointMain(r.repo, st.Head)
		hv := r.head(st.Head)
		before := r.snapshot()
		res, _, err := r.run(f, r.opt, seed+uint64(st.N))
		after := r.snapshot()
		r.countFaults(stats, &tally)
		rep.check(st, "run", f, r.opt, res, err, checkRun(hv, before, after, res, err, false))
		r.clock.Advance(time.Hour)
	}
	exits := maps.Clone(stats.exits)
	runs := stats.runs
	r.converge(rep, steps[len(steps)-1])
	stats.log(t, where)
	t.Logf("%s: %d commits under faults: exit 0 (success) %d, 3 (partial) %d, 1 (failed) %d, 4 (refused) %d",
		where, runs, exits[0], exits[3], exits[1], exits[4])
	if 2*exits[1] >= runs {
		t.Errorf("%s: %d of %d runs failed (exit 1); most must exit 0 or 3: %v", where, exits[1], runs, exits)
	}
}
