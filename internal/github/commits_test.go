package github_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/github/githubtest"
)

// TestCommitPaths_OneCommitsFiles: a commit's paths are those it changes
// from its parent (both of a rename), not those of the range before it; a
// root commit lists every file.
func TestCommitPaths_OneCommitsFiles(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Write("a.md", longText("a"))
	f.repo.Write("b.md", "b")
	root := f.repo.Commit("root")
	f.repo.Move("a.md", "c.md")
	f.repo.Remove("b.md")
	f.repo.Write("d.md", "d")
	second := f.repo.Commit("second")
	src := f.source(t)
	for _, c := range []struct {
		sha  string
		want []string
	}{
		{root, []string{"a.md", "b.md"}},
		{second, []string{"a.md", "b.md", "c.md", "d.md"}},
	} {
		got, err := src.CommitPaths(context.Background(), c.sha)
		if err != nil {
			t.Fatalf("CommitPaths(%s): %v", c.sha, err)
		}
		slices.Sort(got)
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("CommitPaths(%s) (-want +got):\n%s", c.sha, diff)
		}
	}
}

// TestCommitPaths_PagesPast300Files: GitHub lists a commit's files 300 a
// page; every page is read.
func TestCommitPaths_PagesPast300Files(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Write("seed.md", "seed")
	f.repo.Commit("seed")
	for i := range 650 {
		f.repo.Write(fmt.Sprintf("p/%03d.md", i), fmt.Sprint(i))
	}
	head := f.repo.Commit("many")
	src := f.source(t)
	got, err := src.CommitPaths(context.Background(), head)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 650 || slices.Compact(slices.Sorted(slices.Values(got)))[649] != "p/649.md" {
		t.Fatalf("CommitPaths listed %d paths, want the 650 of the commit", len(got))
	}
	if n := f.srv.Requests()[githubtest.KindCommit]; n != 3 {
		t.Errorf("commit requests = %d, want 3 (pages of 300)", n)
	}
}
