package syncer_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/github"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/syncer"
)

// onBranch points the rig's syncer at branch of the same repository.
func (r *staleRig) onBranch(branch string) {
	r.t.Helper()
	src, err := github.New(github.Config{
		Owner: "knue", Repo: "policies", Branch: branch, BaseURL: r.gh.URL(),
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	})
	if err != nil {
		r.t.Fatal(err)
	}
	r.s.Source, r.s.Branch = src, branch
}

// staleRetargetRig has synced main an hour ago, and branch "release" has
// one more policy.
func staleRetargetRig(t *testing.T) *staleRig {
	t.Helper()
	r := newStaleRig(t)
	r.repo.Write("a/가.md", "# 가\n")
	r.repo.Commit("seed")
	if _, err := r.run(time.Hour); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	r.repo.Branch("release")
	r.repo.Checkout("release")
	r.repo.Write("a/나.md", "# 나\n")
	r.repo.Commit("release branch")
	return r
}

// A run of the new branch seconds after a deliberate retarget
// (--allow-rewind) reads the lastRun from before it, naming main. Refused
// on that read, it recorded main again, and every later run of the new
// branch was refused until --allow-rewind was passed again (a reviewer's
// finding, left as a known lock-out). It now waits the window out and
// reads the state again before refusing: it syncs, and so do the runs
// after it.
func TestStaleReads_RunSecondsAfterARetarget_WaitsInsteadOfRefusing(t *testing.T) {
	t.Parallel()
	r := staleRetargetRig(t)
	r.onBranch("release")
	r.opt.AllowRewind = true
	if _, err := r.run(5 * time.Second); err != nil {
		t.Fatalf("the retarget, allowed: %v", err)
	}
	r.opt.AllowRewind = false
	r.repo.Write("a/다.md", "# 다\n")
	head := r.repo.Commit("release moves on")
	res, err := r.run(5 * time.Second)
	if err != nil || res.Summary.Status != policy.RunSuccess {
		t.Fatalf("run 5 s after the retarget: %v (status %s), want a success after waiting out the window", err, res.Summary.Status)
	}
	if !slices.Contains(r.waits, syncer.DefaultConsistencyWindow) {
		t.Errorf("waits %v: the run did not wait out the consistency window", r.waits)
	}
	if diff := r.headMismatch(head); diff != "" {
		t.Errorf("after the run: %s", diff)
	}
	r.clock.Advance(2 * time.Minute)
	if res, err := r.run(time.Hour); err != nil || res.Summary.Branch != "release" {
		t.Fatalf("the next run, reading afresh: %v (branch %q)", err, res.Summary.Branch)
	}
}

// A branch the registry was not synced from is refused on a lagging
// registry too, after one wait, and again on the next run; a dry run, and
// a run whose deadline leaves no time to wait, refuse at once.
func TestStaleReads_WrongBranch_RefusedAfterTheWait(t *testing.T) {
	t.Parallel()
	r := staleRetargetRig(t)
	r.onBranch("release")
	for i := range 2 {
		r.waits = nil
		_, err := r.run(time.Hour)
		if !errors.Is(err, syncer.ErrRewind) {
			t.Fatalf("run %d of the wrong branch: %v, want ErrRewind", i+1, err)
		}
		if len(r.waits) != 1 {
			t.Errorf("run %d waited %v, want the window once", i+1, r.waits)
		}
	}
	for name, opt := range map[string]syncer.Options{
		"dry run":        {DryRun: true},
		"short deadline": {MaxDuration: 90 * time.Second},
	} {
		r.waits = nil
		opt.LeaseTTL = r.opt.LeaseTTL
		if _, err := r.s.Run(context.Background(), opt); !errors.Is(err, syncer.ErrRewind) {
			t.Errorf("%s: %v, want ErrRewind", name, err)
		}
		if len(r.waits) != 0 {
			t.Errorf("%s waited %v, want a refusal at once", name, r.waits)
		}
	}
}

// A run of a wrong branch whose wait before refusing is cut (Ctrl-C, the
// context ending) or whose second read fails fails, and its record names
// the target it first read, not its own: the next run of the wrong branch
// is refused. (A reviewer found the cut run recording its own branch, and
// the next run syncing it.)
func TestStaleReads_WrongBranch_WaitCut_NextRunStillRefused(t *testing.T) {
	t.Parallel()
	r := staleRetargetRig(t)
	r.onBranch("release")
	ctx, cancel := context.WithCancel(context.Background())
	sleep := r.s.Sleep
	r.s.Sleep = func(c context.Context, d time.Duration) error {
		if d == syncer.DefaultConsistencyWindow {
			cancel() // Ctrl-C while waiting out the window
			return context.Canceled
		}
		return sleep(c, d)
	}
	if _, err := r.s.Run(ctx, r.opt); err == nil {
		t.Fatal("the cut run succeeded")
	}
	r.s.Sleep = sleep
	r.clock.Advance(2 * time.Minute)
	if res, err := r.run(time.Hour); !errors.Is(err, syncer.ErrRewind) {
		t.Fatalf("the next run of the wrong branch: %v (status %s, branch %q), want ErrRewind", err, res.Summary.Status, res.Summary.Branch)
	}
}
