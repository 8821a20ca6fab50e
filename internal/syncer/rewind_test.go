package syncer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/github"
	"github.com/knue/syncjob/internal/syncer"
)

// rewindRig has synced main, whose first commit a branch "stale" still
// points at.
func rewindRig(t *testing.T) (r *rig, first string) {
	t.Helper()
	r = newRig(t)
	first = r.seed()
	r.repo.Branch("stale")
	r.repo.Remove("a/가.md")
	r.repo.Write("c/라.md", "# 라\n")
	r.repo.Write("c/마.md", "# 마\n")
	r.repo.Commit("main moves on")
	r.mustRun()
	return r, first
}

// mustRefuseRewind runs with opt and wants a refusal that wrote nothing.
func mustRefuseRewind(t *testing.T, r *rig, opt syncer.Options) {
	t.Helper()
	before, last := r.policies(), r.lastCommit()
	_, err := r.run(opt)
	if !errors.Is(err, syncer.ErrRewind) || !errors.Is(err, differ.ErrRefused) {
		t.Fatalf("run: %v, want a refusal (ErrRewind, exit 4)", err)
	}
	if diff := cmp.Diff(before, r.policies()); diff != "" {
		t.Errorf("a refused run changed the registry (-before +after):\n%s", diff)
	}
	if got := r.lastCommit(); got != last {
		t.Errorf("lastCommit %s after a refusal, want %s", got, last)
	}
	if sum := r.lastRun(); sum.Error == "" {
		t.Errorf("the refusal is not recorded: %+v", sum)
	}
}

// GITHUB_BRANCH pointing at a stale branch at the first commit must not
// wipe the registry: the branch is not the one it was synced from.
func TestRewind_StaleBranch_RefusedUnlessAllowed(t *testing.T) {
	t.Parallel()
	r, first := rewindRig(t)
	src, err := github.New(github.Config{
		Owner: "knue", Repo: "policies", Branch: "stale", BaseURL: r.gh.URL(),
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	})
	if err != nil {
		t.Fatal(err)
	}
	r.s.Source, r.s.Branch = src, "stale"
	for _, opt := range []syncer.Options{{}, {Full: true}} {
		mustRefuseRewind(t, r, opt)
	}
	if _, err := r.run(syncer.Options{AllowRewind: true, AllowMassDelete: true}); err != nil {
		t.Fatalf("allowed: %v", err)
	}
	if got := r.lastCommit(); got != first {
		t.Errorf("lastCommit %s after an allowed retarget, want %s", got, first)
	}
}

// A head behind the synced commit (the branch reset to an older commit)
// is refused in incremental and full runs; a diverged one (a force-push)
// is a full run.
func TestRewind_HeadBehindRefused_DivergedIsFull(t *testing.T) {
	t.Parallel()
	r, first := rewindRig(t)
	r.repo.Reset(first)
	for _, opt := range []syncer.Options{{}, {Full: true}} {
		mustRefuseRewind(t, r, opt)
	}
	r.repo.Write("d/바.md", "# 바\n")
	head := r.repo.Commit("force-pushed")
	res, err := r.run(syncer.Options{})
	if err != nil {
		t.Fatalf("diverged head: %v", err)
	}
	if res.Summary.Mode != "full" || r.lastCommit() != head {
		t.Errorf("diverged head: mode %s, lastCommit %s; want full at %s", res.Summary.Mode, r.lastCommit(), head)
	}
}
