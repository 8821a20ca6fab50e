package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/policy"
)

// TestSync_ModeOnlyChangeAndSymlink_Incremental: GitHub answers a `chmod +x`
// with sha null; the incremental run leaves that policy as it is and lands
// the other changes of the commit, and a policy file replaced by a symlink
// is deleted, both with exit 0.
func TestSync_ModeOnlyChangeAndSymlink_Incremental(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		seed(w)
		w.sync(0)
		before := w.state()
		w.repo.Chmod("규정/제1편/학칙.md", true)
		w.repo.Write("규정/제2편/연구소 설치(운영)․규정.md", "# 연구소 설치․운영 규정 (개정)\n")
		w.repo.Commit("chmod +x and an edit")
		w.sync(0)
		s := w.state()
		if s.lastRun.Mode != "incremental" || s.lastRun.Status != policy.RunSuccess || s.lastRun.Updated != 1 {
			t.Errorf("lastRun = %+v, want an incremental success updating 1", s.lastRun)
		}
		if got, want := s.policies["학칙"], before.policies["학칙"]; !cmp.Equal(got, want) {
			t.Errorf("학칙 = %+v, want it unchanged %+v", got, want)
		}
		if got := s.titles()["연구소 설치(운영)․규정"]; got != "연구소 설치․운영 규정 (개정)" {
			t.Errorf("the edit beside the mode change did not land: title %q", got)
		}

		w.repo.Remove("규정/제1편/대학원 학칙.md")
		w.repo.Symlink("규정/제1편/대학원 학칙.md", "학칙.md")
		head := w.repo.Commit("a policy becomes a symlink")
		w.sync(0)
		s = w.state()
		if _, ok := s.policies["대학원 학칙"]; ok || s.lastRun.Deleted != 1 || s.lastCommit != head {
			t.Errorf("after the symlink: policies %v, lastRun %+v", s.paths(), s.lastRun)
		}
	})
}
