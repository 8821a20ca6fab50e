package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/registry"
)

// TestSync_FirstSyncFailedOnAWrongBranch_RightBranchNotRefused: a first
// sync that fails on a wrong branch synced nothing whole; the registry was
// synced from no branch, so the fixed setting is not refused as a
// retarget. (A reviewer found 1364d45 refusing it: the failed run recorded
// its own branch.)
func TestSync_FirstSyncFailedOnAWrongBranch_RightBranchNotRefused(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		seed(w)
		commitOnBranch(w, "draft", "a draft", func() { w.repo.Write("규정/제3편/초안.md", "# 초안\n") })
		w.env["GITHUB_BRANCH"] = "draft" // a wrong setting
		w.gh.FailNext(githubtest.KindTree, 1000, githubtest.ServerError(502))
		r := w.run("sync")
		if s := w.state(); s.lastRun != nil {
			t.Logf("lastRun after the failed first sync: status %s repo %s branch %s commit %s", s.lastRun.Status, s.lastRun.Repo, s.lastRun.Branch, s.lastRun.CommitSHA)
		} else {
			t.Logf("no lastRun after the failed first sync")
		}
		t.Logf("first sync, GITHUB_BRANCH=draft, GitHub 502: exit %d: %s", r.code, firstLine(r.stdout))
		w.gh.ClearFaults()
		w.env["GITHUB_BRANCH"] = "main" // fixed
		r = w.run("sync")
		t.Logf("then GITHUB_BRANCH=main: exit %d: %s", r.code, firstLine(r.stdout))
		if r.code != 0 {
			t.Errorf("the first successful sync, of the right branch, exits %d: %s", r.code, firstLine(r.stdout))
		}
	})
}

// TestSync_StaleLastRunAfterARetarget_RefusedUntilAllowRewindAgain: on
// Workers KV a run B seconds after a deliberate retarget A (--allow-rewind,
// success) reads lastRun and lastCommit from before A. B waits out the
// consistency window and reads again before refusing (the syncer's
// TestStaleReads_RunSecondsAfterARetarget_WaitsInsteadOfRefusing); here
// the stale read outlasts that wait, as KV does not promise it cannot
// (simulated by putting back what B would have read), so B is refused and
// records the old branch over A's. The next run of the new branch is
// refused too, naming --allow-rewind: the safe side, since a reviewer
// broke each rule that told such a record apart. One run with
// --allow-rewind again settles it: the runs after it pass.
func TestSync_StaleLastRunAfterARetarget_RefusedUntilAllowRewindAgain(t *testing.T) {
	t.Parallel()
	w := newCloudflareWorld(t)
	seed(w)
	w.sync(0)
	commitOnBranch(w, "release", "release branch", func() { w.repo.Write("규정/제3편/새 규정.md", "# 새 규정\n") })
	old, _, _ := w.cf.Value(registry.LastRunKey)
	oldCommit, _, _ := w.cf.Value(registry.LastCommitKey)
	w.env["GITHUB_BRANCH"] = "release"
	w.sync(0, "--allow-rewind") // A: the operator retargets on purpose
	freshCommit, _, _ := w.cf.Value(registry.LastCommitKey)
	w.cf.Set(registry.LastRunKey, old, nil, 0) // B reads A's lastRun and lastCommit stale...
	w.cf.Set(registry.LastCommitKey, oldCommit, nil, 0)
	r := w.run("sync")
	t.Logf("B (stale lastRun): exit %d: %s", r.code, firstLine(r.stdout))
	if r.code != exitRefused {
		t.Fatalf("setup: B, reading from before the retarget, not refused (exit %d)", r.code)
	}
	// the cache expires: lastCommit reads A's again (B, refused, did not
	// write it); lastRun is B's record
	w.cf.Set(registry.LastCommitKey, freshCommit, nil, 0)
	r = w.run("sync") // C, reading fresh
	if r.code != exitRefused || !strings.Contains(r.stdout, "--allow-rewind") {
		t.Fatalf("C, after B's stale refusal: exit %d: %s; want refused, naming --allow-rewind", r.code, firstLine(r.stdout))
	}
	if r = w.run("sync", "--allow-rewind"); r.code != exitOK {
		t.Fatalf("D, with --allow-rewind: exit %d: %s", r.code, firstLine(r.stdout))
	}
	if r = w.run("sync"); r.code != exitOK {
		t.Errorf("E, the new branch after D: exit %d: %s", r.code, firstLine(r.stdout))
	}
}

// TestSync_RecordWithoutRepo_WrongBranchRefusedByAnother_RightBranchNotRefused:
// after a record from before repo and branch were recorded, a wrong
// branch's run refused by another guard (--expect-head) names no branch
// either, so the right branch's next run is not refused. (A reviewer found
// 1364d45 recording the wrong branch's own.)
func TestSync_RecordWithoutRepo_WrongBranchRefusedByAnother_RightBranchNotRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.sync(0)
	stripRepo(t, w) // as a record from before repo/branch existed
	commitOnBranch(w, "draft", "a draft", func() { w.repo.Write("규정/제3편/초안.md", "# 초안\n") })
	w.env["GITHUB_BRANCH"] = "draft"
	r := w.run("sync", "--expect-head", strings.Repeat("a", 40))
	t.Logf("draft, refused by --expect-head: exit %d: %s", r.code, firstLine(r.stdout))
	w.env["GITHUB_BRANCH"] = "main"
	w.repo.Write("규정/제3편/또.md", "# 또\n")
	w.repo.Commit("main moves")
	r = w.run("sync")
	t.Logf("main next: exit %d: %s", r.code, firstLine(r.stdout))
	if r.code != 0 {
		t.Errorf("the branch the registry was synced from is refused: exit %d", r.code)
	}
}

func stripRepo(t *testing.T, w *world) {
	st := w.store()
	defer st.Close()
	raw, err := st.Get(t.Context(), registry.LastRunKey)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "repo")
	delete(m, "branch")
	b, _ := json.Marshal(m)
	if failed := st.Put(t.Context(), []registry.Pair{{Key: registry.LastRunKey, Value: b}}); failed != nil {
		t.Fatal(failed)
	}
}

// TestSync_FirstSyncOfAMisspeltBranch_FixedSettingNotRefused: a first sync
// of a branch GitHub does not know (exit 2) syncs nothing; the fixed
// setting's run is not refused as a retarget. (A reviewer found this
// refused since before today: the failed run recorded "mian".)
func TestSync_FirstSyncOfAMisspeltBranch_FixedSettingNotRefused(t *testing.T) {
	t.Parallel()
	w := newCloudflareWorld(t)
	seed(w)
	w.env["GITHUB_BRANCH"] = "mian"
	r := w.run("sync")
	t.Logf("GITHUB_BRANCH=mian: exit %d: %s", r.code, firstLine(r.stdout+r.stderr))
	if s := w.state(); s.lastRun != nil {
		t.Logf("lastRun: status %s branch %q", s.lastRun.Status, s.lastRun.Branch)
	}
	w.env["GITHUB_BRANCH"] = "main"
	r = w.run("sync")
	t.Logf("fixed: exit %d: %s", r.code, firstLine(r.stdout))
	if r.code != 0 {
		t.Errorf("exit %d", r.code)
	}
}

// commitOnBranch commits what edit writes on a new branch, name, cut from
// main's head, and checks main out again.
func commitOnBranch(w *world, name, msg string, edit func()) {
	w.repo.Branch(name)
	w.repo.Checkout(name)
	edit()
	w.repo.Commit(msg)
	w.repo.Checkout("main")
}
