package syncer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/github"
	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/registrytest"
	"github.com/knue/syncjob/internal/syncer"
)

// staleRig is a syncer over a registry whose reads lag its writes by a
// minute, as Workers KV's may from another location.
type staleRig struct {
	t     *testing.T
	repo  *githubtest.Repo
	clock *registrytest.Clock
	lag   *registrytest.Lagging
	mem   *registry.Memory   // the inner store
	truth *registry.Registry // the inner store, read without lag
	gh    *githubtest.Server
	s     *syncer.Syncer
	opt   syncer.Options  // of every run
	waits []time.Duration // what the syncer slept
}

func newStaleRig(t *testing.T) *staleRig {
	t.Helper()
	repo := githubtest.NewRepo(t)
	gh := githubtest.NewServer(t, "knue", "policies", repo)
	clock := registrytest.NewClock(time.Date(2026, 11, 25, 16, 0, 0, 0, time.UTC))
	mem := registry.NewMemory(clock.Now)
	lag := registrytest.NewLagging(mem, clock.Now, time.Minute)
	src, err := github.New(github.Config{
		Owner: "knue", Repo: "policies", Branch: "main", BaseURL: gh.URL(),
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	r := &staleRig{t: t, repo: repo, clock: clock, lag: lag, mem: mem, truth: registry.New(mem), gh: gh, opt: syncer.Options{LeaseTTL: 3 * time.Minute}}
	r.s = &syncer.Syncer{
		Source: src, Registry: registry.New(lag), Repo: "knue/policies", Branch: "main", Now: clock.Now,
		NewRunID: func() string { n++; return fmt.Sprintf("run%03d", n) },
		Sleep: func(ctx context.Context, d time.Duration) error {
			r.waits = append(r.waits, d)
			clock.Advance(d)
			return ctx.Err()
		},
	}
	return r
}

// run runs once and moves the clock on by gap.
func (r *staleRig) run(gap time.Duration) (syncer.Result, error) {
	r.t.Helper()
	res, err := r.s.Run(context.Background(), r.opt)
	r.clock.Advance(gap)
	return res, err
}

// headMismatch compares the registry as it really is (no lag) with head.
func (r *staleRig) headMismatch(head string) string {
	r.t.Helper()
	want := map[string]string{}
	for path := range r.repo.Files(head) {
		if policy.IsPolicyPath(path) {
			want[policy.NameOf(path)] = r.repo.BlobSHA(head, path)
		}
	}
	got := map[string]string{}
	all, _, err := r.truth.Policies(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	for name, e := range all {
		got[name] = e.SHA
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return fmt.Sprintf("registry %v, head %v", got, want)
	}
	return ""
}

// A run that follows another by seconds reads the lastCommit from before
// it. When the second commit reverts the first, the compare from that
// stale base shows nothing: the run must still not report success while
// the registry differs from the head.
func TestStaleReads_RunSecondsAfterAnother_RevertIsNotMissed(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		first, second func(r *staleRig)
	}{
		"deleted then restored": {
			first:  func(r *staleRig) { r.repo.Remove("a/가.md") },
			second: func(r *staleRig) { r.repo.Write("a/가.md", "# 가\n") },
		},
		"title changed then reverted": {
			first:  func(r *staleRig) { r.repo.Write("a/나.md", "# 나 개정\n") },
			second: func(r *staleRig) { r.repo.Write("a/나.md", "# 나\n") },
		},
		"added then removed": {
			first:  func(r *staleRig) { r.repo.Write("c/유령.md", "# 유령\n") },
			second: func(r *staleRig) { r.repo.Remove("c/유령.md") },
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r := newStaleRig(t)
			r.repo.Write("a/가.md", "# 가\n")
			r.repo.Write("a/나.md", "# 나\n")
			r.repo.Write("b/다.md", "# 다\n")
			r.repo.Commit("seed")
			if _, err := r.run(2 * time.Hour); err != nil {
				t.Fatalf("first sync: %v", err)
			}
			c.first(r)
			r.repo.Commit("first")
			if _, err := r.run(5 * time.Second); err != nil {
				t.Fatalf("run after the first commit: %v", err)
			}
			c.second(r)
			head := r.repo.Commit("second")
			res, err := r.run(5 * time.Second)
			if diff := r.headMismatch(head); diff != "" && err == nil && res.Summary.Status == policy.RunSuccess {
				t.Fatalf("run 5 s after another reported success with a stale view: %s", diff)
			}
			// and the next run, a minute on, converges whatever the last one said
			r.clock.Advance(2 * time.Minute)
			if _, err := r.run(time.Hour); err != nil {
				t.Fatalf("run after the window: %v", err)
			}
			if diff := r.headMismatch(head); diff != "" {
				t.Fatalf("not converged after the window: %s", diff)
			}
		})
	}
}

// seedStale syncs a seed commit and then a first change, and returns the
// rig 5 s after that run (its writes not yet visible).
func seedStale(t *testing.T, r *staleRig) {
	t.Helper()
	r.repo.Write("a/가.md", "# 가\n")
	r.repo.Write("a/나.md", "# 나\n")
	r.repo.Commit("seed")
	if _, err := r.run(2 * time.Hour); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	r.repo.Remove("a/가.md")
	r.repo.Commit("delete 가")
	if _, err := r.run(5 * time.Second); err != nil {
		t.Fatalf("run after the delete: %v", err)
	}
}

// A full run seconds after another lists the registry as it was before
// that run: the names the commits since the stale lastCommit touched are
// written from the head all the same.
func TestStaleReads_FullRunSecondsAfterAnother_RevertIsNotMissed(t *testing.T) {
	t.Parallel()
	r := newStaleRig(t)
	seedStale(t, r)
	r.repo.Write("a/가.md", "# 가\n")
	head := r.repo.Commit("restore 가")
	r.opt.Full = true
	res, err := r.run(5 * time.Second)
	if err != nil || res.Summary.Status != policy.RunSuccess {
		t.Fatalf("full run: %v (status %s)", err, res.Summary.Status)
	}
	if diff := r.headMismatch(head); diff != "" {
		t.Fatalf("full run reported success with a stale view: %s", diff)
	}
	if len(r.waits) != 0 {
		t.Errorf("waited %v: the two commits since the stale base are read, no wait needed", r.waits)
	}
	if n := r.gh.Requests()[githubtest.KindCommit]; n != 1 {
		t.Errorf("commit requests = %d, want 1 (one per commit since the stale base but the head's own)", n)
	}
}

// When the commits since the stale lastCommit are too many to read one by
// one, the run waits out the consistency window under the lease and reads
// the state again: every earlier write is visible then.
func TestStaleReads_RangeOverTheCap_WaitsOutTheWindow(t *testing.T) {
	t.Parallel()
	r := newStaleRig(t)
	r.opt.ConsistencyWindow = 61 * time.Second
	seedStale(t, r)
	r.repo.Write("a/가.md", "# 가\n")
	r.repo.Commit("restore 가")
	head := r.repo.EmptyCommits(100, "empty")
	res, err := r.run(5 * time.Second)
	if err != nil || res.Summary.Status != policy.RunSuccess {
		t.Fatalf("run over the cap: %v (status %s)", err, res.Summary.Status)
	}
	if diff := r.headMismatch(head); diff != "" {
		t.Fatalf("run over the cap reported success with a stale view: %s", diff)
	}
	if len(r.waits) != 1 || r.waits[0] != 61*time.Second {
		t.Errorf("waits = %v, want one of the consistency window (61s)", r.waits)
	}
	if n := r.gh.Requests()[githubtest.KindCommit]; n != 0 {
		t.Errorf("commit requests = %d, want 0: 101 commits are over the cap", n)
	}
}

// A range of one commit: its compare names every name it touched, so the
// run makes no request more than it would on a strongly consistent store.
func TestStaleReads_OneCommitRange_NoExtraRequest(t *testing.T) {
	t.Parallel()
	r := newStaleRig(t)
	seedStale(t, r)
	before := r.gh.Requests()
	r.repo.Write("a/나.md", "# 나 개정\n")
	head := r.repo.Commit("edit 나")
	r.clock.Advance(2 * time.Minute) // the last run's writes are visible: its lastCommit is the base
	if _, err := r.run(time.Hour); err != nil {
		t.Fatal(err)
	}
	if diff := r.headMismatch(head); diff != "" {
		t.Fatal(diff)
	}
	after := r.gh.Requests()
	if n := after[githubtest.KindCommit] - before[githubtest.KindCommit]; n != 0 {
		t.Errorf("commit requests = %d, want 0 for a one-commit range", n)
	}
	if n := after[githubtest.KindCompare] - before[githubtest.KindCompare]; n != 1 {
		t.Errorf("compare requests = %d, want 1", n)
	}
	if len(r.waits) != 0 {
		t.Errorf("waited %v", r.waits)
	}
}

// A strongly consistent registry (memory, bolt) skips all of it: a range
// of several commits costs no commit request and no wait.
func TestStaleReads_StronglyConsistentStore_NoExtraRequests(t *testing.T) {
	t.Parallel()
	r := newStaleRig(t)
	r.s.Registry = r.truth // memory: reads what was written
	seedStale(t, r)
	r.repo.Write("a/가.md", "# 가\n")
	r.repo.Commit("restore 가")
	r.repo.Write("a/나.md", "# 나 개정\n")
	head := r.repo.Commit("edit 나")
	for _, full := range []bool{false, true} {
		r.opt.Full = full
		if _, err := r.run(5 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if diff := r.headMismatch(head); diff != "" {
		t.Fatal(diff)
	}
	if n := r.gh.Requests()[githubtest.KindCommit]; n != 0 {
		t.Errorf("commit requests = %d, want 0 on a strongly consistent store", n)
	}
	if len(r.waits) != 0 {
		t.Errorf("waited %v on a strongly consistent store", r.waits)
	}
}

// clockedReads is a Source whose content reads take a while on the rig's
// clock (a long run), and then read only the first half of the files, as
// slowReads: a run its deadline stops.
type clockedReads struct {
	syncer.Source
	clock *registrytest.Clock
	took  time.Duration
}

func (s clockedReads) Titles(ctx context.Context, commit string, files []policy.File, maxSize int64) (map[string]policy.Content, map[string]error, error) {
	s.clock.Advance(s.took)
	return slowReads{s.Source}.Titles(ctx, commit, files, maxSize)
}

// stoppedStaleRepair syncs 12 policies, deletes them all by hand, and has
// a full run repair them until its deadline stops it, its reads taking
// took on the rig's clock; it returns the head.
func stoppedStaleRepair(t *testing.T, r *staleRig, took time.Duration) string {
	t.Helper()
	for i := range 12 {
		r.repo.Write(fmt.Sprintf("규정/%02d.md", i), fmt.Sprintf("# 규정 %d\n", i))
	}
	head := r.repo.Commit("seed")
	if _, err := r.run(2 * time.Hour); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i := range 12 {
		keys = append(keys, fmt.Sprintf("policy:%02d", i))
	}
	if errs := r.lag.Delete(context.Background(), keys); len(errs) != 0 {
		t.Fatal(errs)
	}
	r.clock.Advance(2 * time.Minute)
	src := r.s.Source
	r.s.Source = clockedReads{Source: src, clock: r.clock, took: took}
	ctx, cancel := context.WithTimeout(context.Background(), 900*time.Millisecond)
	opt := r.opt
	opt.Full, opt.StopBefore = true, 50*time.Millisecond
	res, _ := r.s.Run(ctx, opt)
	cancel()
	r.s.Source = src
	if !res.Summary.StoppedEarly {
		t.Fatalf("setup: the repair was not stopped by its deadline: %+v", res.Summary)
	}
	return head
}

// A run seconds after a long one that stopped for its deadline may read
// that run's lease from while it held it (a minute old) and the lastRun
// from before it. Its head unchanged, it must not take itself for an
// unchanged run and record over the stopped run's record: the drift that
// run found and left would be forgotten, and every later run would report
// success. It defers to the lease, as a run that plans does (history
// only), and the next run, once the window has passed, repairs.
func TestStaleReads_UnchangedHeadSecondsAfterALongStoppedRun_DefersToItsLease(t *testing.T) {
	t.Parallel()
	r := newStaleRig(t)
	head := stoppedStaleRepair(t, r, 90*time.Second)
	r.clock.Advance(5 * time.Second)
	res, err := r.run(2 * time.Minute)
	if res.Summary.Status == policy.RunSuccess {
		t.Errorf("the run 5 s after the stopped repair: %v, success (mode %s) with a stale view", err, res.Summary.Mode)
	}
	res, err = r.run(time.Hour)
	if diff := r.headMismatch(head); diff != "" {
		t.Errorf("the run after the window: %v, %s (mode %s); %s", err, res.Summary.Status, res.Summary.Mode, diff)
	}
}

// A run that waits out the consistency window reads the state again, and
// plans as that state asks: when it shows the last run unclean (a repair
// its deadline stopped, which the first read, a minute stale, did not
// show), the run is full, not the incremental run its stale read chose —
// a compare does not name the drift that repair left.
func TestStaleReads_StateReadAgainShowsAnUncleanRun_RunIsFull(t *testing.T) {
	t.Parallel()
	r := newStaleRig(t)
	r.opt.ConsistencyWindow = 61 * time.Second
	stoppedStaleRepair(t, r, 0)
	r.clock.Advance(5 * time.Second)
	head := r.repo.EmptyCommits(101, "empty") // over the cap: the run waits out the window
	res, err := r.run(time.Hour)
	if diff := r.headMismatch(head); diff != "" && err == nil && res.Summary.Status == policy.RunSuccess {
		t.Errorf("the run after the window: success (mode %s) while %s", res.Summary.Mode, diff)
	}
	if res.Summary.Mode != differ.ModeFull || len(r.waits) != 1 {
		t.Errorf("mode %s after waits %v, want full after one wait of the window", res.Summary.Mode, r.waits)
	}
}

// A dry run on an unchanged head under another run's lease shows that
// nothing is to do, as a dry run that plans does: it takes no lease and
// records nothing, so it has no record to keep from replacing another's.
func TestUnchangedHead_AnotherRunsLease_DryRunNotRefused(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	if _, err := r.reg.TakeLease(context.Background(), nil, "other-run", r.clock.Now(), 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	dry := leased
	dry.DryRun = true
	res, err := r.run(dry)
	if err != nil || res.Summary.Mode != differ.ModeUnchanged {
		t.Errorf("dry run: %v, mode %s; want nothing to do, no refusal", err, res.Summary.Mode)
	}
	if _, err := r.run(leased); !errors.Is(err, registry.ErrLeaseHeld) {
		t.Errorf("the same run, not dry: %v, want ErrLeaseHeld", err)
	}
}

// syncedThenTwoCommits syncs n policies, then commits an edit of each and,
// on top, an add: a range of two commits whose first touches n names. It
// returns the head.
func (r *staleRig) syncedThenTwoCommits(n int) string {
	r.t.Helper()
	for i := range n {
		r.repo.Write(fmt.Sprintf("규정/%03d.md", i), fmt.Sprintf("# 규정 %d\n", i))
	}
	r.repo.Commit("seed")
	if _, err := r.run(2 * time.Hour); err != nil {
		r.t.Fatal(err)
	}
	for i := range n {
		r.repo.Write(fmt.Sprintf("규정/%03d.md", i), fmt.Sprintf("# 규정 %d 개정\n", i))
	}
	r.repo.Commit("edit all")
	r.repo.Write("b/기타.md", "# 기타\n")
	return r.repo.Commit("add one")
}

// A run the write budget (or its deadline) left writes waiting keeps
// lastCommit, so on an eventually consistent registry the next run's range
// touches every name it wrote. Past maxDistrusted names that run waits out
// the consistency window and trusts what it then reads, instead of writing
// every one of them again: what landed is not written twice (review: it
// wrote again all it had landed, and a range too large for one run would
// stop at the same place run after run).
func TestStaleReads_AfterARunLeftWritesWaiting_ManyNamesTouched_WaitsInsteadOfWritingAgain(t *testing.T) {
	t.Parallel()
	r := newStaleRig(t)
	r.s.Registry = registry.New(billedLag{&billingStore{Store: r.lag}})
	const many = 120 // more than maxDistrusted
	head := r.syncedThenTwoCommits(many)
	run := func(o syncer.Options) (syncer.Result, error) {
		res, err := r.s.Run(context.Background(), o)
		r.clock.Advance(2 * time.Hour)
		return res, err
	}
	budgetCutOne(t, run, func() { r.clock.Advance(24 * time.Hour) }, r.opt)
	r.clock.Advance(24 * time.Hour)
	r.waits = nil
	before, _, _ := r.truth.Policies(context.Background())
	landed := map[string]string{}
	for name, e := range before {
		if strings.Contains(e.Title, "개정") {
			landed[name] = e.LastUpdated
		}
	}
	if len(landed) == 0 || len(landed) == many {
		t.Fatalf("setup: %d of %d edits landed; want some", len(landed), many)
	}
	res, err := r.run(time.Hour)
	if !slices.Contains(r.waits, syncer.DefaultConsistencyWindow) {
		t.Errorf("the next run waited %v, want the consistency window", r.waits)
	}
	if err != nil || r.headMismatch(head) != "" {
		t.Fatalf("next run: %v, %s", err, r.headMismatch(head))
	}
	after, _, _ := r.truth.Policies(context.Background())
	var again []string
	for name, lu := range landed {
		if after[name].LastUpdated != lu {
			again = append(again, name)
		}
	}
	slices.Sort(again)
	if len(again) > 0 {
		t.Errorf("the next run (updated %d, added %d) wrote again %d of the %d policies already landed: %v",
			res.Summary.Updated, res.Summary.Added, len(again), len(landed), again)
	}
}

// After a clean run, a push of two commits whose first touches more than
// maxDistrusted names does not wait: the plan writes those names anyway
// (review: a bound on every range made such pushes wait a minute).
func TestStaleReads_CleanRunThenAPushTouchingManyNames_NoWait(t *testing.T) {
	t.Parallel()
	r := newStaleRig(t)
	const many = 120
	head := r.syncedThenTwoCommits(many)
	r.waits = nil
	res, err := r.run(time.Hour)
	if err != nil || r.headMismatch(head) != "" {
		t.Fatalf("run: %v %s", err, r.headMismatch(head))
	}
	if len(r.waits) != 0 {
		t.Errorf("a push after a clean run (updated %d, added %d) waited %v", res.Summary.Updated, res.Summary.Added, r.waits)
	}
}

// A first sync that finds policies but neither lastCommit nor lastRun read
// the state from before the run that wrote them, and may miss that run's
// last writes too: it waits out the window and reads again (a soak found
// such a run recording success over a policy the head had deleted, which
// the run before had written moments earlier).
func TestStaleReads_FirstSyncFindsPoliciesButNoRecord_WaitsAndReadsAgain(t *testing.T) {
	t.Parallel()
	r := newStaleRig(t)
	for i := range 13 {
		r.repo.Write(fmt.Sprintf("규정/%02d.md", i), fmt.Sprintf("# 규정 %d\n", i))
	}
	r.repo.Commit("seed")
	// the run before, made to look as KV may show it: its policies all
	// written a while ago but the last, its record just now
	r.s.Registry = r.truth
	if _, err := r.run(2 * time.Hour); err != nil {
		t.Fatal(err)
	}
	late := []string{"policy:12", registry.LastCommitKey, registry.LastRunKey}
	var pairs []registry.Pair
	for _, k := range late {
		v, err := r.mem.Get(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, registry.Pair{Key: k, Value: v})
	}
	if failed := r.mem.Delete(context.Background(), late); failed != nil {
		t.Fatal(failed)
	}
	r.s.Registry = registry.New(r.lag)
	if failed := r.lag.Put(context.Background(), pairs); failed != nil {
		t.Fatal(failed)
	}
	r.repo.Remove("규정/12.md")
	head := r.repo.Commit("delete 12")
	r.clock.Advance(30 * time.Second)
	r.waits = nil
	res, err := r.run(time.Hour)
	if err == nil && r.headMismatch(head) != "" {
		t.Errorf("run: %s (mode %s) while %s", res.Summary.Status, res.Summary.Mode, r.headMismatch(head))
	}
	if !slices.Contains(r.waits, syncer.DefaultConsistencyWindow) {
		t.Errorf("the run waited %v, want the consistency window", r.waits)
	}
}
