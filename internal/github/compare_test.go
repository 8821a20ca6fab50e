package github_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
)

// longText is content git's rename detection still pairs after a small edit.
func longText(title string) string {
	s := "# " + title + "\n"
	for i := range 20 {
		s += fmt.Sprintf("제%d조 내용은 그대로 유지된다.\n", i)
	}
	return s
}

func mustCompare(t *testing.T, f *fixture, base, head string) policy.Changeset {
	t.Helper()
	cs, err := f.source(t).Compare(context.Background(), base, head)
	if err != nil {
		t.Fatalf("Compare(%s...%s): %v", base, head, err)
	}
	return cs
}

func TestCompare_AddModifyDelete(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Write("keep.md", "keep")
	f.repo.Write("edit.md", "v1")
	f.repo.Write("gone.md", "gone")
	base := f.repo.Commit("base")
	f.repo.Write("edit.md", "v2")
	f.repo.Remove("gone.md")
	f.repo.Write("새 규정 (신설).md", "new")
	head := f.repo.Commit("head")

	got := mustCompare(t, f, base, head)
	want := policy.Changeset{Base: base, Head: head, Commits: []string{head}, TotalCommits: 1, Changes: []policy.Change{
		{Status: policy.Modified, Path: "edit.md", SHA: f.repo.BlobSHA(head, "edit.md")},
		{Status: policy.Removed, Path: "gone.md"},
		{Status: policy.Added, Path: "새 규정 (신설).md", SHA: f.repo.BlobSHA(head, "새 규정 (신설).md")},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Compare (-want +got):\n%s", diff)
	}
}

func TestCompare_Renames(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Write("학칙.md", longText("학칙"))
	f.repo.Write("규정/같은 내용.md", longText("같은"))
	f.repo.Write("old folder/a.md", longText("a"))
	f.repo.Write("old folder/b.md", longText("b"))
	base := f.repo.Commit("base")
	f.repo.Move("학칙.md", "학칙 (개정).md")
	f.repo.Write("학칙 (개정).md", longText("학칙")+"부칙 추가\n")
	f.repo.Move("규정/같은 내용.md", "규정/새 이름.md")
	f.repo.Move("old folder", "새 폴더/moved")
	head := f.repo.Commit("renames")

	got := mustCompare(t, f, base, head)
	want := policy.Changeset{Base: base, Head: head, Commits: []string{head}, TotalCommits: 1, Changes: []policy.Change{
		{Status: policy.Renamed, Path: "새 폴더/moved/a.md", PreviousPath: "old folder/a.md", SHA: f.repo.BlobSHA(head, "새 폴더/moved/a.md")},
		{Status: policy.Renamed, Path: "새 폴더/moved/b.md", PreviousPath: "old folder/b.md", SHA: f.repo.BlobSHA(head, "새 폴더/moved/b.md")},
		{Status: policy.Renamed, Path: "규정/새 이름.md", PreviousPath: "규정/같은 내용.md", SHA: f.repo.BlobSHA(base, "규정/같은 내용.md")},
		{Status: policy.Renamed, Path: "학칙 (개정).md", PreviousPath: "학칙.md", SHA: f.repo.BlobSHA(head, "학칙 (개정).md")},
	}}
	sortChanges(got.Changes)
	sortChanges(want.Changes)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Compare (-want +got):\n%s", diff)
	}
}

func sortChanges(c []policy.Change) {
	sort.Slice(c, func(i, j int) bool { return c[i].Path < c[j].Path })
}

func TestCompare_MergeCommit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Write("a.md", "a")
	f.repo.Commit("a")
	f.repo.Branch("feature")
	f.repo.Write("main.md", "main")
	base := f.repo.Commit("main work")
	f.repo.Checkout("feature")
	f.repo.Write("feature.md", "feature")
	f.repo.Write("a.md", "a2")
	feature := f.repo.Commit("feature work")
	f.repo.Checkout("main")
	head := f.repo.Merge("feature")

	got := mustCompare(t, f, base, head)
	want := policy.Changeset{Base: base, Head: head, Commits: []string{feature, head}, TotalCommits: 2, Changes: []policy.Change{
		{Status: policy.Modified, Path: "a.md", SHA: f.repo.BlobSHA(head, "a.md")},
		{Status: policy.Added, Path: "feature.md", SHA: f.repo.BlobSHA(head, "feature.md")},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Compare (-want +got):\n%s", diff)
	}
}

func TestCompare_Identical_Empty(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Write("a.md", "a")
	head := f.repo.Commit("a")
	got := mustCompare(t, f, head, head)
	if diff := cmp.Diff(policy.Changeset{Base: head, Head: head}, got); diff != "" {
		t.Errorf("Compare (-want +got):\n%s", diff)
	}
}

func wantUntrusted(t *testing.T, f *fixture, base, head string) {
	t.Helper()
	_, err := f.source(t).Compare(context.Background(), base, head)
	if !errors.Is(err, policy.ErrCompareUntrusted) {
		t.Fatalf("Compare(%s...%s) = %v, want ErrCompareUntrusted", base, head, err)
	}
}

func TestCompare_ForcePush_Untrusted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Write("a.md", "a")
	root := f.repo.Commit("root")
	f.repo.Write("b.md", "b")
	old := f.repo.Commit("old head")
	f.repo.Reset(root)
	f.repo.Write("c.md", "c")
	rewritten := f.repo.Commit("rewritten")

	wantUntrusted(t, f, old, rewritten) // diverged
	wantUntrusted(t, f, old, root)      // behind
}

func TestCompare_UnknownBase_Untrusted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Write("a.md", "a")
	head := f.repo.Commit("a")
	wantUntrusted(t, f, "0123456789abcdef0123456789abcdef01234567", head)

	f.srv.FailNext(githubtest.KindCompare, 1, githubtest.StatusError(http.StatusUnprocessableEntity, "No common ancestor"))
	wantUntrusted(t, f, head, head)
}

func TestCompare_300Files_Untrusted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Write("a.md", "a")
	base := f.repo.Commit("a")
	for i := range 300 {
		f.repo.Write(fmt.Sprintf("many/%03d.md", i), fmt.Sprint(i))
	}
	head := f.repo.Commit("300 files")
	wantUntrusted(t, f, base, head)

	f.repo.Remove("many/000.md")
	head = f.repo.Commit("299 files")
	if got := mustCompare(t, f, base, head); len(got.Changes) != 299 {
		t.Errorf("Compare: %d changes, want 299", len(got.Changes))
	}
}

func TestRelation_GitHubsCompareStatus_UnknownCommitsAreUnknown(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Write("a.md", "a")
	base := f.repo.Commit("base")
	f.repo.Write("b.md", "b")
	ahead := f.repo.Commit("ahead")
	f.repo.Reset(base)
	f.repo.Write("c.md", "c")
	other := f.repo.Commit("another line")
	src := f.source(t)
	for _, tc := range []struct{ base, head, want string }{
		{base, base, "identical"},
		{base, ahead, "ahead"},
		{ahead, base, "behind"},
		{ahead, other, "diverged"},
		{"0123456789abcdef0123456789abcdef01234567", base, "unknown"},
	} {
		got, err := src.Relation(context.Background(), tc.base, tc.head)
		if err != nil || got != tc.want {
			t.Errorf("Relation(%.7s, %.7s) = %q, %v; want %q", tc.base, tc.head, got, err, tc.want)
		}
	}
	// One page of one commit: the files are not what it asks for.
	for _, r := range f.srv.Log() {
		if q, _ := url.ParseQuery(r.Query); r.Kind == githubtest.KindCompare && q.Get("per_page") != "1" {
			t.Errorf("compare request %s without per_page=1", r.Path)
		}
	}
	// A rate limit is an error, not an unknown commit.
	f.srv.FailNext(githubtest.KindCompare, 1, githubtest.PrimaryRateLimit(http.StatusForbidden, time.Now().Add(time.Hour)))
	if got, err := src.Relation(context.Background(), base, ahead); !errors.Is(err, policy.ErrRateLimited) {
		t.Errorf("Relation under a rate limit = %q, %v; want ErrRateLimited", got, err)
	}
}

// TestCompare_ModeOnlyChange_ShaFromHeadTree: GitHub answers a `chmod +x`
// as "modified" with sha null; the change keeps the file's blob sha, read
// from the head tree with one request, so the policy stays as it is.
func TestCompare_ModeOnlyChange_ShaFromHeadTree(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Write("규정/run.md", "# run\n")
	f.repo.Write("tool.sh", "#!/bin/sh\n")
	base := f.repo.Commit("base")
	f.repo.Chmod("규정/run.md", true)
	f.repo.Chmod("tool.sh", true)
	head := f.repo.Commit("chmod +x")

	got := mustCompare(t, f, base, head)
	want := policy.Changeset{Base: base, Head: head, Commits: []string{head}, TotalCommits: 1, Changes: []policy.Change{
		{Status: policy.Modified, Path: "tool.sh"},
		{Status: policy.Modified, Path: "규정/run.md", SHA: f.repo.BlobSHA(base, "규정/run.md")},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Compare (-want +got):\n%s", diff)
	}
	if n := f.srv.Requests()[githubtest.KindTree]; n != 1 {
		t.Errorf("tree requests = %d, want 1", n)
	}
}

// TestCompare_FileBecameSymlinkOrSubmodule_Removed: a policy file replaced
// by a symlink or a submodule is no longer a policy: a removal, whatever
// sha GitHub gives it.
func TestCompare_FileBecameSymlinkOrSubmodule_Removed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Write("a.md", "# a\n")
	f.repo.Write("link.md", "# soon a link\n")
	f.repo.Write("sub.md", "# soon a submodule\n")
	f.repo.Write("back.md", "# back\n")
	base := f.repo.Commit("base")
	f.repo.Remove("link.md")
	f.repo.Symlink("link.md", "a.md")
	f.repo.Remove("sub.md")
	f.repo.Submodule("sub.md", base)
	mid := f.repo.Commit("types changed")
	f.repo.Remove("link.md")
	f.repo.Write("link.md", "# a file again\n")
	head := f.repo.Commit("a file again")

	got := mustCompare(t, f, base, mid)
	want := policy.Changeset{Base: base, Head: mid, Commits: []string{mid}, TotalCommits: 1, Changes: []policy.Change{
		{Status: policy.Removed, Path: "link.md"},
		{Status: policy.Removed, Path: "sub.md"},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Compare to symlink and submodule (-want +got):\n%s", diff)
	}
	got = mustCompare(t, f, mid, head)
	want = policy.Changeset{Base: mid, Head: head, Commits: []string{head}, TotalCommits: 1, Changes: []policy.Change{
		{Status: policy.Modified, Path: "link.md", SHA: f.repo.BlobSHA(head, "link.md")},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Compare from symlink back to a file (-want +got):\n%s", diff)
	}
}

// TestCompare_FilesAbsent_Untrusted: a compare whose answer lists no files
// although head is commits ahead cannot say what changed: the run goes
// full rather than read it as "nothing changed".
func TestCompare_FilesAbsent_Untrusted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Write("a.md", "a")
	base := f.repo.Commit("base")
	f.repo.Write("a.md", "b")
	head := f.repo.Commit("edit")
	f.srv.CompareWithoutFiles = true
	wantUntrusted(t, f, base, head)
	if got := mustCompare(t, f, head, head); len(got.Changes) != 0 {
		t.Errorf("identical commits without files: %+v", got)
	}
}
