package syncer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/github"
	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/registrytest"
	"github.com/knue/syncjob/internal/syncer"
)

// rig is a syncer over a fake GitHub and a fault-injecting memory registry.
type rig struct {
	t     *testing.T
	repo  *githubtest.Repo
	gh    *githubtest.Server
	store *registrytest.Faulty
	reg   *registry.Registry
	clock *registrytest.Clock
	s     *syncer.Syncer
}

// syncedRig is a rig whose seed commit is synced: three policies in the
// registry, the starting point of most tests.
func syncedRig(t *testing.T) *rig {
	t.Helper()
	r := newRig(t)
	r.seed()
	r.mustRun()
	return r
}

func newRig(t *testing.T) *rig {
	t.Helper()
	repo := githubtest.NewRepo(t)
	gh := githubtest.NewServer(t, "knue", "policies", repo)
	clock := registrytest.NewClock(time.Date(2026, 11, 25, 16, 0, 0, 0, time.UTC))
	store := registrytest.NewFaulty(registry.NewMemory(clock.Now))
	src, err := github.New(github.Config{
		Owner: "knue", Repo: "policies", Branch: "main", BaseURL: gh.URL(),
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New(store)
	n := 0
	return &rig{t: t, repo: repo, gh: gh, store: store, reg: reg, clock: clock, s: &syncer.Syncer{
		Source: src, Registry: reg, Repo: "knue/policies", Branch: "main", Now: clock.Now,
		NewRunID: func() string { n++; return fmt.Sprintf("run%03d", n) },
		Sleep:    func(ctx context.Context, d time.Duration) error { clock.Advance(d); return ctx.Err() },
	}}
}

func (r *rig) run(opt syncer.Options) (syncer.Result, error) {
	r.t.Helper()
	res, err := r.s.Run(context.Background(), opt)
	r.clock.Advance(time.Hour)
	return res, err
}

func (r *rig) mustRun() syncer.Result {
	r.t.Helper()
	res, err := r.run(syncer.Options{})
	if err != nil {
		r.t.Fatalf("run: %v", err)
	}
	return res
}

func (r *rig) policies() map[string]policy.Entry {
	r.t.Helper()
	p, problems, err := r.reg.Policies(context.Background())
	if err != nil || len(problems) > 0 {
		r.t.Fatalf("policies: %v %v", err, problems)
	}
	return p
}

func (r *rig) lastCommit() string {
	r.t.Helper()
	c, err := r.reg.LastCommit(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	return c
}

func (r *rig) lastRun() policy.RunSummary {
	r.t.Helper()
	s, err := r.reg.LastRun(context.Background())
	if err != nil || s == nil {
		r.t.Fatalf("lastRun %v, %v", s, err)
	}
	return *s
}

func (r *rig) seed() string {
	r.repo.Write("a/가.md", "# 가\n")
	r.repo.Write("a/나.md", "# 나\n")
	r.repo.Write("b/다.md", "# 다\n")
	return r.repo.Commit("seed")
}

// unreadable is a Source whose reads of the given paths fail, as a file
// GitHub cannot serve does while the others are read.
type unreadable struct {
	syncer.Source
	paths map[string]bool
}

func (u unreadable) Titles(ctx context.Context, commit string, files []policy.File, maxSize int64) (map[string]policy.Content, map[string]error, error) {
	got, failed, err := u.Source.Titles(ctx, commit, files, maxSize)
	for p := range u.paths {
		if _, ok := got[p]; ok {
			delete(got, p)
			if failed == nil {
				failed = map[string]error{}
			}
			failed[p] = errors.New("github: get blob: HTTP 502: Server Error")
		}
	}
	return got, failed, err
}

// failReads makes the reads of paths fail until the returned func is called.
func (r *rig) failReads(paths ...string) (restore func()) {
	src := r.s.Source
	m := map[string]bool{}
	for _, p := range paths {
		m[p] = true
	}
	r.s.Source = unreadable{Source: src, paths: m}
	return func() { r.s.Source = src }
}

func TestRun_ContentUnreadable_FailureNotDelete(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	first := r.seed()
	r.mustRun()
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Write("a/나.md", "# 나 개정\n")
	r.repo.Commit("edit")
	defer r.failReads("a/가.md")()
	_, err := r.run(syncer.Options{})
	if !errors.Is(err, syncer.ErrPartial) {
		t.Fatalf("err = %v", err)
	}
	if p := r.policies(); p["가"].Title != "가" || p["나"].Title != "나 개정" || r.lastCommit() == first {
		t.Errorf("entries %+v, lastCommit %s", p, r.lastCommit())
	}
}

func TestRun_EveryReadFails_OutageNotItemFailures(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	first := r.seed()
	r.mustRun()
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Write("a/나.md", "# 나 개정\n")
	r.repo.Commit("edit")
	r.gh.FailNext(githubtest.KindBlob, -1, githubtest.ServerError(502))
	res, err := r.run(syncer.Options{})
	if !errors.Is(err, syncer.ErrOutage) || res.Summary.Status != policy.RunFailed {
		t.Fatalf("err = %v, status %s; want an outage, failed", err, res.Summary.Status)
	}
	if p := r.policies(); p["가"].Title != "가" || p["나"].Title != "나" || r.lastCommit() != first {
		t.Errorf("entries %+v, lastCommit %s; want nothing written and lastCommit kept", p, r.lastCommit())
	}
	if q, err := r.reg.FailedQueue(context.Background()); err != nil || len(q) != 0 {
		t.Errorf("an outage moved retry counts: %+v, %v", q, err)
	}
	r.gh.ClearFaults()
	r.mustRun()
	if p := r.policies(); p["가"].Title != "가 개정" || p["나"].Title != "나 개정" {
		t.Errorf("after the outage: %+v", p)
	}
}

func TestRun_RegistryListFails_NothingWritten(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		full bool // a full run lists the registry; an incremental one reads what it touches
	}{{"listing", true}, {"read by name", false}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			first := r.seed()
			r.mustRun()
			r.repo.Remove("a")
			r.repo.Commit("delete a folder")
			if tc.full {
				r.store.FailList(errors.New("listing unavailable"))
			} else {
				// the three reads of the state pass; the read of the entries fails
				r.store.FailCall(registrytest.Get, r.store.Calls(registrytest.Get)+4, errors.New("listing unavailable"))
			}
			before := r.store.Calls(registrytest.Delete)
			if _, err := r.run(syncer.Options{Full: tc.full}); err == nil || !strings.Contains(err.Error(), "listing unavailable") {
				t.Fatalf("err = %v", err)
			}
			if r.store.Calls(registrytest.Delete) != before {
				t.Error("a failed registry read led to deletes")
			}
			r.store.FailList(nil)
			if len(r.policies()) != 3 || r.lastCommit() != first || r.lastRun().Status != policy.RunFailed {
				t.Errorf("after a failed read: %d policies, lastCommit %s, lastRun %+v", len(r.policies()), r.lastCommit(), r.lastRun())
			}
		})
	}
}

func TestRun_BatchesBoundedPutsBeforeDeletesMetadataLast(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for i := range 120 {
		r.repo.Write(fmt.Sprintf("old/%03d.md", i), fmt.Sprintf("# %d\n", i))
	}
	r.repo.Commit("old")
	r.mustRun()
	r.repo.Remove("old")
	for i := range 90 {
		r.repo.Write(fmt.Sprintf("new/n%03d.md", i), fmt.Sprintf("# n%d\n", i))
	}
	head := r.repo.Commit("replace everything")
	logStart := len(r.store.Log())
	if _, err := r.run(syncer.Options{BatchSize: 50, Concurrency: 3, AllowMassDelete: true}); err != nil {
		t.Fatal(err)
	}
	calls := r.store.Log()[logStart:]
	var order []string
	for _, c := range calls {
		if c.Method != registrytest.Put && c.Method != registrytest.Delete {
			continue
		}
		if len(c.Keys) > 50 {
			t.Errorf("%s of %d keys, want batches of at most 50", c.Method, len(c.Keys))
		}
		kind := string(c.Method)
		if strings.HasPrefix(c.Keys[0], "metadata:") {
			kind = "metadata"
		}
		if len(order) == 0 || order[len(order)-1] != kind {
			order = append(order, kind)
		}
	}
	// the lease taken first, then the puts, the deletes, the run's record
	if diff := cmp.Diff([]string{"metadata", "Put", "Delete", "metadata"}, order); diff != "" {
		t.Errorf("write phases (-want +got):\n%s", diff)
	}
	if len(r.policies()) != 90 || r.lastCommit() != head {
		t.Errorf("%d policies, lastCommit %s", len(r.policies()), r.lastCommit())
	}
}

func TestRun_ReconcileIntervalPassed_FullRun(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	r.repo.Write("c/라.md", "# 라\n")
	r.repo.Commit("add")
	res := r.mustRun()
	if res.Summary.Mode != differ.ModeIncremental {
		t.Fatalf("mode %s, want incremental", res.Summary.Mode)
	}
	r.clock.Advance(8 * 24 * time.Hour)
	r.repo.Write("c/마.md", "# 마\n")
	r.repo.Commit("add again")
	res = r.mustRun()
	if res.Summary.Mode != differ.ModeFull || res.Summary.ModeReason != "reconcile interval passed" {
		t.Errorf("mode %s (%s), want full after the reconcile interval", res.Summary.Mode, res.Summary.ModeReason)
	}
	if res = r.mustRun(); res.Summary.Mode != differ.ModeUnchanged {
		t.Errorf("mode %s after a fresh full run, want unchanged", res.Summary.Mode)
	}
}

func TestRun_ReconcileRepairsDrift(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	// Someone deletes an entry by hand; an incremental run cannot see it,
	// a full run puts it back.
	if errs := r.store.Delete(context.Background(), []string{"policy:나"}); len(errs) > 0 {
		t.Fatal(errs)
	}
	r.repo.Write("c/라.md", "# 라\n")
	r.repo.Commit("add")
	res, err := r.run(syncer.Options{Full: true})
	if err != nil || res.Summary.Added != 2 {
		t.Fatalf("full run: %v, %+v", err, res.Summary)
	}
	if _, ok := r.policies()["나"]; !ok {
		t.Error("full run did not restore the entry")
	}
}

func TestRun_ConflictsAndSkipsReportedEveryRun(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.repo.Write("a/규정.md", "# a\n")
	r.repo.Write("b/규정.md", "# b\n")
	r.repo.Write("c/빈.md", "")
	r.repo.Write("c/정상.md", "# 정상\n")
	r.repo.Commit("seed")
	r.mustRun()
	r.repo.Write("c/정상.md", "# 정상 개정\n")
	r.repo.Commit("unrelated edit")
	res := r.mustRun()
	if res.Summary.Mode != differ.ModeIncremental {
		t.Fatalf("mode %s", res.Summary.Mode)
	}
	want := []policy.Conflict{{PolicyName: "규정", Winner: "a/규정.md", Losers: []string{"b/규정.md"}}}
	if diff := cmp.Diff(want, r.lastRun().Conflicts); diff != "" {
		t.Errorf("conflicts of an incremental run (-want +got):\n%s", diff)
	}
	if sk := r.lastRun().Skipped; len(sk) != 1 || sk[0].Path != "c/빈.md" {
		t.Errorf("skipped of an incremental run = %+v", sk)
	}
	// The skipped file gains content: it is added (the tree shows it).
	r.repo.Write("c/빈.md", "# 이제 내용\n")
	r.repo.Commit("fill")
	r.mustRun()
	if p := r.policies(); p["빈"].Title != "이제 내용" || len(r.lastRun().Skipped) != 0 {
		t.Errorf("filled file: %+v, skipped %+v", p["빈"], r.lastRun().Skipped)
	}
}

func TestRun_SkippedWinnerStillWins_LoserEditedIncrementally(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.repo.Write("a/규정.md", "") // the winner, skipped
	r.repo.Write("b/규정.md", "# b\n")
	r.repo.Commit("seed")
	r.mustRun()
	if _, ok := r.policies()["규정"]; ok {
		t.Fatal("the loser of a skipped winner was written")
	}
	r.repo.Write("b/규정.md", "# b 개정\n")
	r.repo.Commit("edit the loser")
	r.mustRun()
	if _, ok := r.policies()["규정"]; ok {
		t.Error("an incremental run wrote the loser although the winner is only skipped")
	}
}

func TestRun_ContextCancelled_RunRecordedFailed(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	first := r.seed()
	r.mustRun()
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Commit("edit")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.s.Run(ctx, syncer.Options{}); err == nil {
		t.Fatal("a cancelled run succeeded")
	}
	if lr := r.lastRun(); lr.Status != policy.RunFailed || r.lastCommit() != first {
		t.Errorf("lastRun %+v, lastCommit %s", lr, r.lastCommit())
	}
}

func TestRun_RegistryReadFails_ErrorSaysEachLayerOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.seed()
	boom := errors.New("boom")
	r.store.FailList(boom)
	res, err := r.run(syncer.Options{Full: true})
	if !errors.Is(err, boom) || res.Summary.Status != policy.RunFailed {
		t.Fatalf("err = %v, status %s; want the listing's failure", err, res.Summary.Status)
	}
	msg := err.Error()
	if strings.Count(msg, "registry: ") != 1 {
		t.Errorf("%q: want the registry layer named once", msg)
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(msg, ": ") {
		part = strings.ReplaceAll(part, `"`, "")
		if seen[part] {
			t.Errorf("%q says %q twice", msg, part)
		}
		seen[part] = true
	}
}
