package syncer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

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
	truth *registry.Registry // the inner store, read without lag
	s     *syncer.Syncer
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
	return &staleRig{t: t, repo: repo, clock: clock, lag: lag, truth: registry.New(mem), s: &syncer.Syncer{
		Source: src, Registry: registry.New(lag), Repo: "knue/policies", Branch: "main", Now: clock.Now,
		NewRunID: func() string { n++; return fmt.Sprintf("run%03d", n) },
		Sleep:    func(ctx context.Context, d time.Duration) error { clock.Advance(d); return ctx.Err() },
	}}
}

// run runs once and moves the clock on by gap.
func (r *staleRig) run(gap time.Duration) (syncer.Result, error) {
	r.t.Helper()
	res, err := r.s.Run(context.Background(), syncer.Options{LeaseTTL: 3 * time.Minute})
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
