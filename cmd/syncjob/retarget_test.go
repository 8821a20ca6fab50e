package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/github/githubtest"
)

// retargetWorld has synced main; branch "draft" split from it and
// diverged (neither behind nor ahead of main): the registry must not be
// synced from it unless the operator says so (--allow-rewind).
func retargetWorld(t *testing.T, w *world) (mainHead string) {
	t.Helper()
	seed(w)
	w.repo.Branch("draft")
	w.repo.Write("규정/제3편/새 규정.md", "# 새 규정\n")
	mainHead = w.repo.Commit("main moves on")
	w.sync(0)
	w.repo.Checkout("draft")
	w.repo.Remove("규정/제1편/대학원 학칙.md")
	w.repo.Write("규정/제1편/학칙.md", "# 초안: 학칙\n")
	w.repo.Commit("a draft nobody approved")
	w.repo.Checkout("main")
	w.env["GITHUB_BRANCH"] = "draft" // a wrong setting
	return mainHead
}

// TestSync_RetargetRefused_EveryRunOfTheWrongBranch: the refusal of a
// wrong GITHUB_BRANCH holds for every run of it, not the first only. (An
// adversarial helper found the second run syncing the registry from the
// wrong branch: the refused run recorded the draft's branch and head, and
// the check skipped a lastRun whose commit was not lastCommit.)
func TestSync_RetargetRefused_EveryRunOfTheWrongBranch(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		mainHead := retargetWorld(t, w)
		for i := 1; i <= 2; i++ {
			r := w.run("sync")
			t.Logf("run %d with GITHUB_BRANCH=draft: exit %d: %s", i, r.code, strings.SplitN(r.stdout, "\n", 2)[0])
			s := w.state()
			if r.code != exitRefused || s.lastCommit != mainHead {
				t.Fatalf("run %d with GITHUB_BRANCH=draft: exit %d, lastCommit %s (main's %s); registry titles now %v", i, r.code, s.lastCommit, mainHead, s.titles())
			}
		}
	})
}

// TestLambda_RetargetRefused_RetryRefusedToo: in Lambda the refusal is a
// RunError, which Lambda retries with the same event: the retry is
// refused too (an adversarial helper found it syncing the wrong branch).
func TestLambda_RetargetRefused_RetryRefusedToo(t *testing.T) {
	t.Parallel()
	w := newCloudflareWorld(t)
	mainHead := retargetWorld(t, w)
	h := w.lambdaHandler(new(bytes.Buffer))
	for i := 1; i <= 2; i++ { // the invocation, then Lambda's automatic retry of it
		inv := w.invokeWith(h, `{"trigger":"schedule"}`, time.Minute)
		s := w.state()
		status := "?"
		if s.lastRun != nil {
			status = s.lastRun.Status
		}
		t.Logf("attempt %d: lastRun status %s, err %v", i, status, inv.err)
		if status != "refused" || s.lastCommit != mainHead {
			t.Fatalf("attempt %d with GITHUB_BRANCH=draft: lastRun status %s, lastCommit %s (main's %s); registry titles now %v", i, status, s.lastCommit, mainHead, s.titles())
		}
	}
}

// TestStatus_AfterRetargetRefused_NamesTheRegistrysBranch: after a
// refused retarget, status names the branch the registry holds, not the
// one refused.
func TestStatus_AfterRetargetRefused_NamesTheRegistrysBranch(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	retargetWorld(t, w)
	if r := w.run("sync"); r.code != exitRefused {
		t.Fatalf("sync: exit %d", r.code)
	}
	delete(w.env, "GITHUB_BRANCH") // the operator looks, settings back to normal
	delete(w.env, "GITHUB_REPO")
	r := w.run("status")
	line := ""
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "repository") {
			line = l
		}
	}
	t.Logf("status: %s", line)
	if !strings.Contains(line, "branch main") {
		t.Errorf("status after a refused retarget (lastCommit is main's) says %q", line)
	}
}

// TestSync_Retarget_RefusedAfterAFailedRun: a wrong branch is refused
// after a run that kept lastCommit where it was too: here a run on main
// failed (GitHub 502 on the one file it read).
func TestSync_Retarget_RefusedAfterAFailedRun(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	mainHead := retargetWorld(t, w)
	w.env["GITHUB_BRANCH"] = "main"
	w.repo.Write("규정/제3편/또 다른 규정.md", "# 또 다른 규정\n")
	next := w.repo.Commit("main moves on again")
	w.gh.FailWithin(githubtest.KindBlob, w.repo.BlobSHA(next, "규정/제3편/또 다른 규정.md"), githubtest.ServerError(502))
	if r := w.run("sync"); r.code != exitFailed {
		t.Fatalf("the failing run: exit %d\n%s", r.code, r.stdout)
	}
	w.gh.ClearFaults()
	w.env["GITHUB_BRANCH"] = "draft"
	r := w.run("sync")
	s := w.state()
	t.Logf("GITHUB_BRANCH=draft after a failed run on main: exit %d: %s", r.code, strings.SplitN(r.stdout, "\n", 2)[0])
	if r.code != exitRefused || s.lastCommit != mainHead {
		t.Errorf("exit %d, lastCommit %s (main's %s): registry titles now %v", r.code, s.lastCommit, mainHead, s.titles())
	}
}
