package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// seed writes a small repository of policies in nested folders and commits it.
func seed(w *world) string {
	w.repo.Write("README.md", "# not a policy\n")
	w.repo.Write(".github/pull_request_template.md", "# not a policy either\n")
	w.repo.Write("규정/제1편/학칙.md", "# 한국교원대학교 학칙\n\n제1조 목적\n")
	w.repo.Write("규정/제1편/대학원 학칙.md", "# 한국교원대학교 대학원 학칙\n")
	w.repo.Write("규정/제2편/연구소 설치(운영)․규정.md", "# 연구소 설치․운영 규정\n")
	w.repo.Write("규정/제2편/notes.txt", "not markdown\n")
	return w.repo.Commit("seed policies")
}

func TestSync_FirstRun_WritesEveryPolicyAndQueue(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		head := seed(w)
		r := w.sync(0)
		s := w.state()
		want := map[string]string{
			"학칙":            "규정/제1편/학칙.md",
			"대학원 학칙":        "규정/제1편/대학원 학칙.md",
			"연구소 설치(운영)․규정": "규정/제2편/연구소 설치(운영)․규정.md",
		}
		if diff := cmp.Diff(want, s.paths()); diff != "" {
			t.Errorf("policies (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(map[string]string{
			"학칙":            "한국교원대학교 학칙",
			"대학원 학칙":        "한국교원대학교 대학원 학칙",
			"연구소 설치(운영)․규정": "연구소 설치․운영 규정",
		}, s.titles()); diff != "" {
			t.Errorf("titles (-want +got):\n%s", diff)
		}
		for name, e := range s.policies {
			if wantSHA := w.repo.BlobSHA(head, e.Path); e.SHA != wantSHA || e.Status != "active" || e.LastUpdated == "" {
				t.Errorf("%s: sha %s status %q updated %q, want sha %s active", name, e.SHA, e.Status, e.LastUpdated, wantSHA)
			}
			q, ok := s.queue[name]
			if !ok || q.Operation != policy.OpAdd || q.SHA != e.SHA || q.RetryCount != 0 {
				t.Errorf("queue:%s = %+v (present %v), want an add of %s", name, q, ok, e.SHA)
			}
		}
		if s.lastCommit != head {
			t.Errorf("lastCommit %q, want %q", s.lastCommit, head)
		}
		if s.lastRun == nil || s.lastRun.Status != policy.RunSuccess || s.lastRun.Mode != "full" || s.lastRun.Added != 3 || s.lastRun.CommitSHA != head {
			t.Errorf("lastRun = %+v", s.lastRun)
		}
		for _, k := range s.keys {
			if !strings.HasPrefix(k, "policy:") && !strings.HasPrefix(k, "queue:") && !strings.HasPrefix(k, "metadata:sync:") {
				t.Errorf("key %q is outside the schema's prefixes", k)
			}
		}
		if gh, _ := r.requests(t); gh != 6 { // head, tree, the archive's link (asked beside the tree, unused), 3 blobs
			t.Errorf("github requests %d, want 6 (head, tree, the archive's link, one blob per file)", gh)
		}
	})
}

func TestSync_FirstRun_ManyFilesReadFromOneArchive(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		for i := range 120 {
			w.repo.Write(fmt.Sprintf("규정/제%d편/규정 %03d.md", i%7, i), fmt.Sprintf("# 규정 %d\n", i))
		}
		w.repo.Commit("many")
		r := w.sync(0)
		if gh, _ := r.requests(t); gh != 4 { // head, tree, archive link, archive download
			t.Errorf("github requests %d, want 4", gh)
		}
		if got := len(w.state().policies); got != 120 {
			t.Errorf("%d policies, want 120", got)
		}
	})
}

func TestSync_UnchangedHead_OneGitHubRequestNoPolicyWrites(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		seed(w)
		w.sync(0)
		before := w.state()
		r := w.sync(0)
		after := w.state()
		gh, reg := r.requests(t)
		if gh != 1 {
			t.Errorf("github requests %d, want exactly 1", gh)
		}
		// Reads of lastCommit, lastRun (which names what waits for retry:
		// nothing) and the lease (was the last run clean?), then one write
		// of the run record: no listing, no lease taken, no policy read.
		// Bolt: one read of the three keys, one Put. Cloudflare: one bulk
		// get of the three, and one bulk write of the run history key and
		// lastRun together.
		wantReg := map[string]int{backendBolt: 2, backendCloudflare: 2}[w.backend]
		if reg != wantReg {
			t.Errorf("registry requests %d, want %d", reg, wantReg)
		}
		if diff := cmp.Diff(before.policies, after.policies); diff != "" {
			t.Errorf("policies changed (-before +after):\n%s", diff)
		}
		if diff := cmp.Diff(before.queue, after.queue); diff != "" {
			t.Errorf("queue changed (-before +after):\n%s", diff)
		}
		if after.lastRun.Mode != "unchanged" || after.lastRun.Status != policy.RunSuccess || after.lastRun.Timestamp == before.lastRun.Timestamp {
			t.Errorf("the unchanged run is not recorded: %+v", after.lastRun)
		}
	})
}

func TestSync_AddModifyDelete_Incremental(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		seed(w)
		w.sync(0)
		w.repo.Write("규정/제3편/신규규정.md", "# 신규 규정\n")
		w.repo.Write("규정/제1편/학칙.md", "# 한국교원대학교 학칙 (개정)\n")
		w.repo.Remove("규정/제1편/대학원 학칙.md")
		head := w.repo.Commit("add, modify, delete")
		r := w.sync(0)
		s := w.state()
		if diff := cmp.Diff(map[string]string{
			"학칙":            "한국교원대학교 학칙 (개정)",
			"연구소 설치(운영)․규정": "연구소 설치․운영 규정",
			"신규규정":          "신규 규정",
		}, s.titles()); diff != "" {
			t.Errorf("titles (-want +got):\n%s", diff)
		}
		if _, ok := s.queue["대학원 학칙"]; ok {
			t.Error("queue entry of the deleted policy is still there")
		}
		if q := s.queue["학칙"]; q.Operation != policy.OpUpdate || q.SHA != w.repo.BlobSHA(head, "규정/제1편/학칙.md") {
			t.Errorf("queue:학칙 = %+v, want an update of the new sha", q)
		}
		if s.lastRun.Mode != "incremental" || s.lastRun.Added != 1 || s.lastRun.Updated != 1 || s.lastRun.Deleted != 1 || s.lastRun.Unchanged != 0 {
			t.Errorf("lastRun = %+v", s.lastRun)
		}
		if s.lastCommit != head {
			t.Errorf("lastCommit %s, want %s", s.lastCommit, head)
		}
		// head, compare, tree (a file was removed), two blobs
		if gh, _ := r.requests(t); gh != 5 {
			t.Errorf("github requests %d, want 5", gh)
		}
	})
}

func TestSync_Rename_DeletesOldAddsNew(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		seed(w)
		w.sync(0)
		w.repo.Move("규정/제1편/학칙.md", "규정/제1편/학칙 전문.md")
		w.repo.Write("규정/제1편/학칙 전문.md", "# 한국교원대학교 학칙 전문\n")
		w.repo.Commit("rename and edit")
		w.sync(0)
		s := w.state()
		if _, ok := s.policies["학칙"]; ok {
			t.Error("old name still in the registry")
		}
		if e := s.policies["학칙 전문"]; e.Path != "규정/제1편/학칙 전문.md" || e.Title != "한국교원대학교 학칙 전문" {
			t.Errorf("new entry = %+v", e)
		}
		if _, ok := s.queue["학칙"]; ok {
			t.Error("old queue entry still there")
		}
		if q := s.queue["학칙 전문"]; q.Operation != policy.OpAdd {
			t.Errorf("queue of new name = %+v, want add", q)
		}
	})
}

func TestSync_RenameUnchangedContent_DeletesOldAddsNew(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		seed(w)
		w.sync(0)
		w.repo.Move("규정/제1편/학칙.md", "규정/제1편/교칙.md")
		w.repo.Commit("pure rename")
		w.sync(0)
		s := w.state()
		if _, ok := s.policies["학칙"]; ok {
			t.Error("old name still in the registry")
		}
		if e := s.policies["교칙"]; e.Path != "규정/제1편/교칙.md" || e.Title != "한국교원대학교 학칙" {
			t.Errorf("renamed entry = %+v", e)
		}
		if s.lastRun.Added != 1 || s.lastRun.Deleted != 1 {
			t.Errorf("lastRun = %+v, want 1 added 1 deleted", s.lastRun)
		}
	})
}

func TestSync_MoveKeepsName_NoDelete(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		seed(w)
		w.sync(0)
		before := w.state()
		w.repo.Move("규정/제1편/학칙.md", "규정/제9편/학칙.md")
		w.repo.Commit("move to another folder")
		w.sync(0)
		s := w.state()
		e, ok := s.policies["학칙"]
		if !ok || e.Path != "규정/제9편/학칙.md" || e.SHA != before.policies["학칙"].SHA || e.Title != "한국교원대학교 학칙" {
			t.Fatalf("moved entry = %+v (present %v)", e, ok)
		}
		if diff := cmp.Diff(before.queue["학칙"], s.queue["학칙"]); diff != "" {
			t.Errorf("a path-only move rewrote the queue entry (-before +after):\n%s", diff)
		}
		if s.lastRun.Deleted != 0 || s.lastRun.Moved != 1 {
			t.Errorf("lastRun = %+v, want 1 moved, 0 deleted", s.lastRun)
		}
	})
}

func TestSync_MergeCommitWithFolderMoves(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		seed(w)
		w.sync(0)
		w.repo.Branch("reorg")
		w.repo.Move("규정/제1편", "규정/제1편 학사")
		w.repo.Commit("reorganise folders")
		w.repo.Checkout("main")
		w.repo.Write("규정/제2편/새 규정.md", "# 새 규정\n")
		w.repo.Commit("meanwhile on main")
		head := w.repo.Merge("reorg")
		w.sync(0)
		s := w.state()
		want := map[string]string{
			"학칙":            "규정/제1편 학사/학칙.md",
			"대학원 학칙":        "규정/제1편 학사/대학원 학칙.md",
			"연구소 설치(운영)․규정": "규정/제2편/연구소 설치(운영)․규정.md",
			"새 규정":          "규정/제2편/새 규정.md",
		}
		if diff := cmp.Diff(want, s.paths()); diff != "" {
			t.Errorf("policies after merge (-want +got):\n%s", diff)
		}
		if s.lastCommit != head || s.lastRun.Deleted != 0 {
			t.Errorf("lastCommit %s (want %s), lastRun %+v", s.lastCommit, head, s.lastRun)
		}
	})
}

func TestSync_DeleteWholeFolder(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		seed(w)
		w.sync(0)
		w.repo.Remove("규정/제1편")
		w.repo.Commit("repeal part 1")
		w.sync(0)
		if diff := cmp.Diff(map[string]string{"연구소 설치(운영)․규정": "규정/제2편/연구소 설치(운영)․규정.md"}, w.state().paths()); diff != "" {
			t.Errorf("policies (-want +got):\n%s", diff)
		}
	})
}

func TestSync_ForcePush_FullRun(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		first := seed(w)
		w.repo.Write("규정/제3편/잘못 올린 규정.md", "# 실수\n")
		w.repo.Commit("mistake")
		w.sync(0)
		w.repo.Reset(first)
		w.repo.Write("규정/제3편/올바른 규정.md", "# 올바른 규정\n")
		head := w.repo.Commit("the right one")
		w.sync(0)
		s := w.state()
		if s.lastRun.Mode != "full" || !strings.Contains(s.lastRun.ModeReason, "diverged") {
			t.Errorf("mode %q (%s), want full because diverged", s.lastRun.Mode, s.lastRun.ModeReason)
		}
		if s.lastRun.LastFullRun != s.lastRun.Timestamp {
			t.Errorf("lastFullRun %q, want this run (%s): the reconcile interval restarts", s.lastRun.LastFullRun, s.lastRun.Timestamp)
		}
		if _, ok := s.policies["잘못 올린 규정"]; ok {
			t.Error("the force-pushed-away policy is still there")
		}
		if _, ok := s.policies["올바른 규정"]; !ok || s.lastCommit != head {
			t.Errorf("new policy missing or lastCommit %s != %s", s.lastCommit, head)
		}
	})
}

func TestSync_UnknownBase_FullRun(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		seed(w)
		w.sync(0)
		st := w.store()
		if errs := st.Put(t.Context(), []registry.Pair{{Key: registry.LastCommitKey, Value: []byte(strings.Repeat("ab", 20))}}); len(errs) > 0 {
			t.Fatal(errs)
		}
		_ = st.Close()
		w.repo.Write("규정/제3편/추가.md", "# 추가\n")
		w.repo.Commit("add")
		w.sync(0)
		s := w.state()
		if s.lastRun.Mode != "full" || s.lastRun.Added != 1 || s.lastRun.Unchanged != 3 {
			t.Errorf("lastRun = %+v, want a full run adding 1", s.lastRun)
		}
	})
}

func TestSync_MoreThan300Changes_FullRun(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		seed(w)
		w.sync(0)
		for i := range 301 {
			w.repo.Write(fmt.Sprintf("대량/규정%03d.md", i), fmt.Sprintf("# 규정 %d\n", i))
		}
		w.repo.Commit("bulk import")
		w.sync(0)
		s := w.state()
		if s.lastRun.Mode != "full" || len(s.policies) != 304 {
			t.Errorf("mode %q, %d policies; want full and 304", s.lastRun.Mode, len(s.policies))
		}
	})
}

func TestSync_TruncatedTree_Completed(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		for i := range 40 {
			w.repo.Write(fmt.Sprintf("규정/제%d편/제%d장/규정 %02d.md", i%4, i%3, i), fmt.Sprintf("# 규정 %d\n", i))
		}
		w.repo.Commit("nested")
		w.gh.TruncateTreesOver = 10
		w.sync(0)
		if got := len(w.state().policies); got != 40 {
			t.Errorf("%d policies from a truncated tree, want 40", got)
		}
	})
}

func TestSync_RateLimits_FailWithoutDeleting(t *testing.T) {
	t.Parallel()
	// A rate limit on any request of the run, the head's or one after it
	// while the plan is being built with a delete pending, fails the run:
	// nothing written, lastCommit kept, and no retry (a rate limit is not
	// waited out).
	reset := time.Date(2026, 11, 25, 23, 0, 0, 0, time.UTC)
	faults := []struct {
		name  string
		fault githubtest.Fault
	}{
		{"primary 403", githubtest.PrimaryRateLimit(403, reset)},
		{"primary 429", githubtest.PrimaryRateLimit(429, reset)},
		// a secondary limit of a minute or less is waited out; longer ends the run
		{"secondary 403", githubtest.SecondaryRateLimit(403, 2*time.Minute)},
		{"secondary 429", githubtest.SecondaryRateLimit(429, 2*time.Minute)},
	}
	// Each stage commits a deletion of 학칙 after a first run and returns
	// the arguments of the run that meets the rate limit.
	stages := []struct {
		name string
		kind string // the request kind that fails; AnyKind: the head, the first request
		prep func(w *world) []string
	}{
		{"head", githubtest.AnyKind, func(w *world) []string {
			w.repo.Remove("규정/제1편/학칙.md")
			w.repo.Commit("delete")
			return nil
		}},
		{"compare", githubtest.KindCompare, func(w *world) []string {
			// incremental: the compare would report the deletion
			w.repo.Remove("규정/제1편/학칙.md")
			w.repo.Commit("delete")
			return nil
		}},
		{"tree", githubtest.KindTree, func(w *world) []string {
			w.repo.Remove("규정/제1편/학칙.md")
			w.repo.Commit("delete")
			return []string{"--full"}
		}},
		{"archive link", githubtest.KindArchiveLink, func(w *world) []string {
			// more than 10 files to read: their contents come from the tarball
			for i := range 11 {
				w.repo.Write(fmt.Sprintf("규정/제3편/규정 %02d.md", i), fmt.Sprintf("# 규정 %02d\n", i))
			}
			w.repo.Remove("규정/제1편/학칙.md")
			w.repo.Commit("delete one, add eleven")
			return []string{"--full"}
		}},
	}
	for _, st := range stages {
		for _, tc := range faults {
			t.Run(st.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				forEachBackend(t, func(t *testing.T, w *world) {
					first := seed(w)
					w.sync(0)
					args := st.prep(w)
					head := w.repo.Head("main")
					before := w.state()
					w.gh.Settle(50 * time.Millisecond) // the first sync's archive link, asked ahead, may still be answered
					w.gh.ResetRequests()
					w.sleeps = nil
					w.gh.FailNext(st.kind, -1, tc.fault)
					r := w.sync(1, args...)

					log := w.gh.Log()
					var limited []githubtest.Request
					for _, req := range log {
						if req.Status == tc.fault.Status {
							limited = append(limited, req)
						}
					}
					if len(limited) != 1 {
						t.Fatalf("%d requests answered %d, want 1 (rate limits are not retried): %+v", len(limited), tc.fault.Status, log)
					}
					if st.kind == githubtest.AnyKind {
						if len(log) != 1 {
							t.Errorf("%d GitHub requests after the head failed, want none: %+v", len(log)-1, log[1:])
						}
					} else {
						if limited[0].Kind != st.kind {
							t.Errorf("the rate limit met a %s request, want %s", limited[0].Kind, st.kind)
						}
						if log[0].Status != 200 {
							t.Errorf("the head request answered %d, want 200: the fault must come after it", log[0].Status)
						}
						if n := w.gh.Requests()[githubtest.KindBlob] + w.gh.Requests()[githubtest.KindArchive]; n != 0 {
							t.Errorf("%d content requests after the rate limit", n)
						}
					}

					s := w.state()
					if _, ok := s.policies["학칙"]; !ok {
						t.Error("a rate limit deleted a policy")
					}
					if diff := cmp.Diff(before.policies, s.policies); diff != "" {
						t.Errorf("policies changed (-before +after):\n%s", diff)
					}
					if diff := cmp.Diff(before.queue, s.queue); diff != "" {
						t.Errorf("queue changed (-before +after):\n%s", diff)
					}
					if s.lastCommit != first {
						t.Errorf("lastCommit moved to %s", s.lastCommit)
					}
					if s.lastRun == nil || s.lastRun.Status != policy.RunFailed || !strings.Contains(s.lastRun.Error, "rate limit") {
						t.Fatalf("lastRun = %+v, want failed with the rate limit", s.lastRun)
					}
					if st.kind != githubtest.AnyKind && s.lastRun.CommitSHA != head {
						t.Errorf("lastRun commit %q, want the head %s (read before the rate limit)", s.lastRun.CommitSHA, head)
					}
					if !strings.Contains(r.stderr, "retry after") {
						t.Errorf("stderr does not say when to retry:\n%s", r.stderr)
					}
					if len(w.sleeps) != 0 {
						t.Errorf("a rate limit was retried after %v", w.sleeps)
					}
				})
			})
		}
	}
}

func TestSync_RateLimitAfterPlanning_NothingDeleted(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		first := seed(w)
		w.sync(0)
		w.repo.Remove("규정/제1편/학칙.md")
		w.repo.Write("규정/제1편/대학원 학칙.md", "# 개정\n")
		w.repo.Commit("delete and modify")
		w.gh.FailNext("blob", -1, githubtest.SecondaryRateLimit(429, 2*time.Minute))
		w.sync(1)
		s := w.state()
		if _, ok := s.policies["학칙"]; !ok || s.lastCommit != first {
			t.Errorf("policy deleted (%v) or lastCommit moved (%s) after a rate limit while reading", !ok, s.lastCommit)
		}
	})
}

func TestSync_UnknownRepository_Exit2(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		seed(w)
		w.env["GITHUB_REPO"] = "knue/no-such-repo"
		r := w.sync(2)
		if !strings.Contains(r.stderr, "knue/no-such-repo") {
			t.Errorf("error does not name the repository:\n%s", r.stderr)
		}
		w.env["GITHUB_REPO"] = "knue/policies"
		w.env["GITHUB_BRANCH"] = "no-such-branch"
		r = w.sync(2)
		if !strings.Contains(r.stderr, "no-such-branch") {
			t.Errorf("error does not name the branch:\n%s", r.stderr)
		}
	})
}

func TestSync_OversizedAndEmptyFiles_SkippedEntriesKept(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		seed(w)
		w.sync(0)
		before := w.state()
		w.repo.Write("규정/제1편/학칙.md", "")
		w.repo.Write("규정/제1편/대학원 학칙.md", "# big\n"+strings.Repeat("가", (1<<20)/3+1))
		w.repo.Write("규정/제3편/빈 규정.md", "")
		w.repo.Commit("empty and oversized")
		r := w.sync(0)
		s := w.state()
		for _, name := range []string{"학칙", "대학원 학칙"} {
			if diff := cmp.Diff(before.policies[name], s.policies[name]); diff != "" {
				t.Errorf("%s changed although skipped (-before +after):\n%s", name, diff)
			}
		}
		if _, ok := s.policies["빈 규정"]; ok {
			t.Error("an empty file was added")
		}
		if len(s.lastRun.Skipped) != 3 || s.lastRun.Status != policy.RunSuccess {
			t.Errorf("lastRun skipped %+v status %s, want 3 skipped and success", s.lastRun.Skipped, s.lastRun.Status)
		}
		if !strings.Contains(r.stderr, "file skipped") {
			t.Errorf("no warning for skipped files:\n%s", r.stderr)
		}
		// A full run (tree sizes known) keeps them too.
		w.sync(0, "--full")
		if got := w.state(); got.policies["학칙"].SHA != before.policies["학칙"].SHA || len(got.lastRun.Skipped) != 3 {
			t.Errorf("full run: 학칙 %+v, skipped %+v", got.policies["학칙"], got.lastRun.Skipped)
		}
	})
}

func TestSync_Titles_EdgeCases(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		w.repo.Write("a/제목없음.md", "본문만 있고 제목은 없다\n## 부제\n")
		w.repo.Write("a/여러제목.md", "\n# 첫째 제목\n# 둘째 제목\n")
		w.repo.Write("a/bom crlf.md", "\ufeff# BOM 제목\r\n\r\n본문\r\n")
		w.repo.Write("a/front matter.md", "---\ntitle: x\n# not this\n---\n# 머리말 다음 제목\n")
		w.repo.Write("a/fence.md", "```\n# 코드 속 제목\n```\n# 진짜 제목\n")
		w.repo.Commit("titles")
		w.sync(0)
		want := map[string]string{
			"제목없음":         "제목없음",
			"여러제목":         "첫째 제목",
			"bom crlf":     "BOM 제목",
			"front matter": "머리말 다음 제목",
			"fence":        "진짜 제목",
		}
		if diff := cmp.Diff(want, w.state().titles()); diff != "" {
			t.Errorf("titles (-want +got):\n%s", diff)
		}
	})
}

func TestSync_DuplicateNames_FirstPathWinsConflictReported(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		w.repo.Write("z폴더/규정.md", "# 나중\n")
		w.repo.Write("a폴더/규정.md", "# 먼저\n")
		w.repo.Commit("duplicates")
		r := w.sync(0)
		s := w.state()
		if e := s.policies["규정"]; e.Path != "a폴더/규정.md" || e.Title != "먼저" {
			t.Errorf("winner = %+v, want a폴더/규정.md", e)
		}
		want := []policy.Conflict{{PolicyName: "규정", Winner: "a폴더/규정.md", Losers: []string{"z폴더/규정.md"}}}
		if diff := cmp.Diff(want, s.lastRun.Conflicts); diff != "" {
			t.Errorf("conflicts (-want +got):\n%s", diff)
		}
		if !strings.Contains(r.stderr, "duplicate policy name") {
			t.Errorf("conflict not logged:\n%s", r.stderr)
		}
		// The winner disappears: the other path takes over, no delete.
		w.repo.Remove("a폴더/규정.md")
		w.repo.Commit("remove winner")
		w.sync(0)
		if e := w.state().policies["규정"]; e.Path != "z폴더/규정.md" || e.Title != "나중" {
			t.Errorf("after the winner left: %+v", e)
		}
	})
}

func TestSync_NFDName_StoredAsNFC(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		nfd := "\u1112\u1161\u11a8\u110e\u1175\u11a8" // 학칙 decomposed
		w.repo.Write("규정/"+nfd+".md", "# 학칙\n")
		w.repo.Commit("nfd name")
		w.sync(0)
		s := w.state()
		e, ok := s.policies["학칙"]
		if !ok || e.Path != "규정/"+nfd+".md" {
			t.Fatalf("policies = %v; want the NFC key 학칙 with the repository's path", s.paths())
		}
		// Modifying it through its NFD path updates the same key.
		w.repo.Write("규정/"+nfd+".md", "# 학칙 개정\n")
		w.repo.Commit("edit nfd")
		w.sync(0)
		if got := w.state(); len(got.policies) != 1 || got.policies["학칙"].Title != "학칙 개정" {
			t.Errorf("after edit: %v", got.titles())
		}
	})
}

func TestSync_DryRun_WritesNothing(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		seed(w)
		r := w.sync(0, "--dry-run")
		if keys := w.state().keys; len(keys) != 0 {
			t.Errorf("dry run wrote %v", keys)
		}
		for _, want := range []string{"dry run", "nothing written", "planned, not applied:", "+  학칙", "Plan: 3 to add, 0 to change, 0 to move, 0 to delete."} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("dry-run output lacks %q:\n%s", want, r.stdout)
			}
		}
		r = w.sync(0, "--dry-run", "--json")
		if !strings.Contains(r.stdout, `"action": "add"`) || !strings.Contains(r.stdout, `"policyName": "학칙"`) {
			t.Errorf("dry-run JSON:\n%s", r.stdout)
		}
	})
}
