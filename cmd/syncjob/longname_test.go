package main

import (
	"strings"
	"testing"
)

// TestSync_NameOverTheKeyLimit_SkippedBeforeAnyRequest_Incremental: a file
// whose name makes a key over Cloudflare's 512 bytes is skipped and
// reported in an incremental run too; the other files of its commit land.
func TestSync_NameOverTheKeyLimit_SkippedBeforeAnyRequest_Incremental(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		seed(w)
		w.sync(0)
		long := strings.Repeat("규", 170) // 510 bytes: policy:{name} is 517
		// a file name over 255 bytes: git stores it, a file system cannot
		w.repo.Write("규정/새 규정.md", "# 새 규정\n")
		w.repo.Write("tmp-long.md", "# 긴 이름\n")
		sha := w.repo.Git("hash-object", "-w", "tmp-long.md")
		w.repo.Remove("tmp-long.md")
		w.repo.Git("add", "규정/새 규정.md")
		w.repo.Git("update-index", "--add", "--cacheinfo", "100644,"+sha+",규정/"+long+".md")
		w.repo.Git("commit", "-q", "-m", "a name over the limit, and another file")
		w.sync(0)
		s := w.state()
		if s.lastRun.Mode != "incremental" || s.lastRun.Added != 1 || len(s.lastRun.Skipped) != 1 || s.lastRun.Skipped[0].PolicyName != long {
			t.Errorf("lastRun = %+v, want an incremental run adding 1 and skipping the long name", s.lastRun)
		}
		if _, ok := s.policies["새 규정"]; !ok {
			t.Errorf("the other file of the commit did not land: %v", s.paths())
		}
	})
}
