package main

import (
	"testing"

	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
)

// featureWorld has synced main twice (lastCommit m1, then m2) and has a
// branch "feature" cut from main's tip with an unapproved change.
func featureWorld(t *testing.T, w *world) (m1, m2 []byte) {
	t.Helper()
	seed(w)
	w.sync(0)
	m1, _, _ = w.cf.Value(registry.LastCommitKey)
	w.repo.Write("규정/제3편/새 규정.md", "# 새 규정\n")
	w.repo.Commit("main moves on")
	w.sync(0)
	m2, _, _ = w.cf.Value(registry.LastCommitKey)
	commitOnBranch(w, "feature", "an unapproved feature", func() {
		w.repo.Remove("규정/제1편/대학원 학칙.md")
		w.repo.Write("규정/제1편/학칙.md", "# 초안: 학칙\n")
	})
	return m1, m2
}

// TestSync_StaleLastCommit_FeatureBranchFromMainsTip_Refused: a wrong
// GITHUB_BRANCH names a feature branch cut from main's tip; its first run
// reads a stale lastCommit and is refused. The next run (Lambda's retry,
// the next cron), reading fresh, is refused too. (A reviewer found
// 2d47d82's commit-graph rule letting it through: the head held the
// stored lastCommit.)
func TestSync_StaleLastCommit_FeatureBranchFromMainsTip_Refused(t *testing.T) {
	t.Parallel()
	w := newCloudflareWorld(t)
	m1, m2 := featureWorld(t, w)
	w.env["GITHUB_BRANCH"] = "feature"           // a wrong setting
	w.cf.Set(registry.LastCommitKey, m1, nil, 0) // the run reads lastCommit from before main's last sync
	r := w.run("sync")
	t.Logf("feature, stale lastCommit: exit %d: %s", r.code, firstLine(r.stdout))
	w.cf.Set(registry.LastCommitKey, m2, nil, 0) // the cache expires
	r = w.run("sync")
	s := w.state()
	t.Logf("feature again (retry / next cron): exit %d: %s; lastRun branch %s", r.code, firstLine(r.stdout), s.lastRun.Branch)
	if r.code != exitRefused {
		t.Errorf("wrong branch synced without --allow-rewind: exit %d, registry titles now %v", r.code, s.titles())
	}
}

// TestSync_FailedStateRead_TargetKept_WrongBranchRefused: a run on main
// whose registry state read fails records main (it could not read the
// last run's), so a wrong branch's next run is refused. (A reviewer found
// 2d47d82 recording none, and the wrong branch synced.)
func TestSync_FailedStateRead_TargetKept_WrongBranchRefused(t *testing.T) {
	t.Parallel()
	w := newCloudflareWorld(t)
	retargetWorld(t, w) // main synced, draft diverged, GITHUB_BRANCH=draft
	w.env["GITHUB_BRANCH"] = "main"
	faults := make([]cloudflaretest.Fault, 8)
	for i := range faults {
		faults[i] = cloudflaretest.ServerError(503)
	}
	w.cf.FailNext(faults...)
	r := w.run("sync")
	s := w.state()
	t.Logf("main, KV reads failing: exit %d: %s", r.code, firstLine(r.stdout+r.stderr))
	if s.lastRun != nil {
		t.Logf("lastRun: status %s repo %q branch %q", s.lastRun.Status, s.lastRun.Repo, s.lastRun.Branch)
	}
	w.env["GITHUB_BRANCH"] = "draft"
	r = w.run("sync")
	s = w.state()
	t.Logf("draft next: exit %d: %s", r.code, firstLine(r.stdout))
	if r.code != exitRefused {
		t.Errorf("wrong branch synced without --allow-rewind: exit %d, titles %v", r.code, s.titles())
	}
}
