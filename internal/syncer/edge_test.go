package syncer_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/syncer"
)

func TestLegacy_V1KeyIsAlsoANewPolicyName_NotDeleted(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	// v1 keyed 학칙 by its title "학칙"; in v2 another file carries that title,
	// and a file named 학칙 exists too.
	r.putRaw(map[string]string{"policy:학칙": `{"title":"학칙","fileNo":"868"}`})
	r.repo.Write("a/학칙 전문.md", "# 학칙\n")
	r.repo.Write("b/학칙.md", "# 한국교원대학교 학칙\n")
	r.repo.Commit("seed")
	res := r.mustRun()
	p := r.policies()
	if p["학칙"].Path != "b/학칙.md" || p["학칙 전문"].V1().FileNo != "868" {
		t.Errorf("policies = %+v", p)
	}
	if _, ok := r.queueEntries()["학칙"]; !ok || res.Summary.Added != 2 {
		t.Errorf("queue:학칙 missing or summary %+v", res.Summary)
	}
}

func TestIncremental_SymlinkAdded_NotAPolicy(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	r.repo.Symlink("a/link.md", "가.md")
	r.repo.Commit("a symlink named .md")
	if res := r.mustRun(); res.Summary.Added != 0 {
		t.Errorf("summary %+v", res.Summary)
	}
	if _, ok := r.policies()["link"]; ok {
		t.Error("a symlink became a policy")
	}
}

func TestGuard_SmallRegistryReplacedByOneUnrelatedFile_Refused(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for i := range 10 {
		r.repo.Write(fmt.Sprintf("규정/p%02d.md", i), fmt.Sprintf("# P%d\n", i))
	}
	r.repo.Commit("ten")
	r.mustRun()
	r.repo.Remove("규정")
	r.repo.Write("docs/guide.md", "# guide\n")
	r.repo.Commit("wrong tree")
	if _, err := r.run(syncer.Options{}); !errors.Is(err, differ.ErrRefused) {
		t.Fatalf("err = %v, want ErrRefused", err)
	}
	if len(r.policies()) != 10 {
		t.Errorf("%d policies left", len(r.policies()))
	}
}

func TestDeadLetter_Unreadable_DoesNotBlockSyncs(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	r.putRaw(map[string]string{"dead-letter:y": `not json`})
	r.repo.Write("a/라.md", "# 라\n")
	r.repo.Commit("add")
	if _, err := r.run(syncer.Options{}); err != nil {
		t.Fatalf("one unreadable dead letter failed the run: %v", err)
	}
	if _, ok := r.policies()["라"]; !ok {
		t.Error("the add did not land")
	}
}

func TestRetry_PendingThenSkipped_Settles(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	r.repo.Write("a/가.md", "# 가 2\n")
	r.repo.Commit("edit")
	r.store.FailKeys(map[string]error{"policy:가": errors.New("boom")})
	if _, err := r.run(syncer.Options{}); !errors.Is(err, syncer.ErrPartial) {
		t.Fatal(err)
	}
	r.store.FailKeys(nil)
	r.repo.Write("a/가.md", "")
	r.repo.Commit("emptied")
	r.mustRun()
	if q, ok := r.queueEntries()["가"]; ok {
		t.Errorf("queue:가 still waits for a retry the head no longer needs: %+v", q)
	}
	if res := r.mustRun(); res.Summary.Mode != differ.ModeUnchanged {
		t.Errorf("mode %s (%s), want unchanged", res.Summary.Mode, res.Summary.ModeReason)
	}
	if e := r.policies()["가"]; e.Title != "가" {
		t.Errorf("skipped file's entry changed: %+v", e)
	}
}

// A symlink already in the tree whose target changes: the compare lists it
// "modified", with a blob sha and blob_url, like any edited file, and no
// mode; an incremental run published it (review).
func TestIncremental_SymlinkRetargeted_NotAPolicy(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.seed()
	r.repo.Symlink("c/바로가기.md", "../a/가.md")
	r.repo.Commit("a symlink")
	r.mustRun()
	if _, ok := r.policies()["바로가기"]; ok {
		t.Fatal("setup: a full run published the symlink")
	}
	r.repo.Remove("c/바로가기.md")
	r.repo.Symlink("c/바로가기.md", "../a/나.md")
	r.repo.Commit("the symlink points elsewhere")
	res := r.mustRun()
	if e, ok := r.policies()["바로가기"]; ok {
		t.Errorf("%s run (mode %s) published the retargeted symlink c/바로가기.md as a policy: %+v", res.Summary.Status, res.Summary.Mode, e)
	}
}

// The same symlink named like a real policy in a folder that sorts first:
// the incremental run took it as the winner of a name conflict and
// replaced the real policy 가 (its path, sha and title) with the link
// (review).
func TestIncremental_SymlinkRetargeted_ReplacesTheRealPolicy(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.seed()
	r.repo.Symlink("0-links/가.md", "../a/가.md")
	r.repo.Commit("a link to 가")
	r.mustRun()
	want := r.policies()["가"]
	if want.Path != "a/가.md" {
		t.Fatalf("setup: 가 = %+v", want)
	}
	r.repo.Remove("0-links/가.md")
	r.repo.Symlink("0-links/가.md", "../b/다.md")
	r.repo.Commit("the link points elsewhere")
	res := r.mustRun()
	if got := r.policies()["가"]; got.Path != want.Path || got.SHA != want.SHA {
		t.Errorf("%s run (mode %s, conflicts %v): 가 = %s@%.7s, want %s@%.7s (the regular file; the symlink is no policy)",
			res.Summary.Status, res.Summary.Mode, res.Summary.Conflicts, got.Path, got.SHA, want.Path, want.SHA)
	}
}
