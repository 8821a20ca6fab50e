package githubtest_test

import (
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/github/githubtest"
)

func TestRepo_EmptyCommits_OneProcessSameTreeDatesFollowOn(t *testing.T) {
	t.Parallel()
	r := githubtest.NewRepo(t)
	r.Write("a.md", "# a\n")
	first := r.Commit("first")
	last := r.EmptyCommits(3, "empty")
	if got := r.Git("rev-list", "--count", first+".."+last); got != "3" {
		t.Errorf("%s commits after the first, want 3", got)
	}
	if r.Git("rev-parse", first+"^{tree}") != r.Git("rev-parse", last+"^{tree}") {
		t.Error("an empty commit changed the tree")
	}
	if got := r.Git("log", "-1", "--format=%B", last); got != "empty 2" {
		t.Errorf("message %q, want %q", got, "empty 2")
	}
	if got := r.Git("log", "--format=%cI", first+".."+last); got != "2024-01-01T00:00:04+00:00\n2024-01-01T00:00:03+00:00\n2024-01-01T00:00:02+00:00" {
		t.Errorf("dates:\n%s\nwant one second apart after the first's (%s)", got, r.Git("log", "-1", "--format=%cI", first))
	}
	if next := r.Commit("next"); !strings.Contains(r.Git("rev-list", next), last) {
		t.Error("the next commit does not follow the empty ones")
	}
	if r.Head("main") == first {
		t.Error("the branch did not move")
	}
}
