package githubtest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/github/githubtest"
)

// TestCommit_SameShasAsGit builds one history twice: with the commits
// githubtest writes itself, and with git add + git commit (a repository
// that staged by hand once commits through git from then on). Every commit
// id must agree: same blobs, trees, modes, order, dates and messages.
func TestCommit_SameShasAsGit(t *testing.T) {
	t.Parallel()
	written, byGit := githubtest.NewRepo(t), githubtest.NewRepo(t)
	byGit.Git("add", "-A") // staging by hand: git makes its commits
	long := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		do  func(r *githubtest.Repo)
		msg string
	}{
		{func(r *githubtest.Repo) {
			r.Write("규정/학칙 (2024).md", "# 학칙\n")
			r.Write("규정/하위/세칙.md", "# 세칙\n")
			r.Write("\u1100\u1161.md", "# NFD\n")
			r.Write("a.b", "dot")
			r.Write("a/x.md", "in a folder named a")
			r.Write("a-b", "dash")
			r.Write("empty.md", "")
		}, "first"},
		{func(r *githubtest.Repo) {
			r.Write("a/x.md", "in a folder named A") // same size, at once
			r.Chmod("a-b", true)
			r.Symlink("link.md", "규정/학칙 (2024).md")
		}, "  second line one  \n\n\n  body with trailing blanks   \n\n"},
		{func(r *githubtest.Repo) {}, "nothing changed"},
		{func(r *githubtest.Repo) {
			r.Move("규정/하위", "규정/옮김")
			r.Remove("a.b")
			r.WriteFrom("big.md", strings.NewReader(strings.Repeat("# 큰 파일\n", 20000)))
			r.WriteFrom("huge.md", strings.NewReader(strings.Repeat("# 아주 큰 파일\n", 300000))) // 5.4 MB: git writes it
			if err := os.MkdirAll(filepath.Join(r.Dir(), "only/empty/folders"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, "move, remove, big, empty folders"},
		{func(r *githubtest.Repo) {
			// two files of one size, unchanged for long: hashed, then one
			// moved onto the other keeps its old mtime
			r.Write("old1.md", "one")
			r.Write("old2.md", "two")
			for _, p := range []string{"old1.md", "old2.md"} {
				if err := os.Chtimes(filepath.Join(r.Dir(), p), long, long); err != nil {
					t.Fatal(err)
				}
			}
		}, "old files"},
		{func(r *githubtest.Repo) { r.Move("old1.md", "old2.md") }, "moved onto"},
		{func(r *githubtest.Repo) {
			r.Write("old2.md", "six") // same size, new mtime
			r.Chmod("a-b", false)
		}, "rewritten"},
		{func(r *githubtest.Repo) {
			r.Branch("side")
			r.Checkout("side")
			r.Write("side.md", "# side\n")
		}, "on a branch"},
		{func(r *githubtest.Repo) {
			r.Checkout("main")
			r.Write("main.md", "# main\n")
		}, "back on main"},
	}
	var first string
	for i, step := range steps {
		step.do(written)
		step.do(byGit)
		got, want := written.Commit(step.msg), byGit.Commit(step.msg)
		if got != want {
			t.Fatalf("step %d (%q): commit %s, git made %s\nwritten:\n%s\ngit:\n%s", i, step.msg, got, want,
				written.Git("ls-tree", "-r", "-t", got), byGit.Git("ls-tree", "-r", "-t", want))
		}
		if i == 0 {
			first = got
		}
	}
	// git commands that read the index after written commits
	if got, want := written.Merge("side"), byGit.Merge("side"); got != want {
		t.Fatalf("merge: %s, git made %s", got, want)
	}
	written.Reset(first)
	byGit.Reset(first)
	written.Write("after-reset.md", "x")
	byGit.Write("after-reset.md", "x")
	if got, want := written.Commit("after reset"), byGit.Commit("after reset"); got != want {
		t.Fatalf("after reset: %s, git made %s\n%s", got, want, written.Git("status", "--porcelain"))
	}
	if out := written.Git("fsck", "--strict", "--no-dangling"); out != "" {
		t.Errorf("git fsck: %s", out)
	}
	if got := written.Git("status", "--porcelain"); got != "" {
		t.Errorf("status after the reset and a commit, want clean:\n%s", got)
	}
}

// TestCommit_RunsNoGit: a commit of the work tree is written without git,
// which would leave its index behind (.git/index).
func TestCommit_RunsNoGit(t *testing.T) {
	t.Parallel()
	r := githubtest.NewRepo(t)
	r.Write("a.md", "# a\n")
	r.Commit("first")
	r.Write("b/c.md", "# c\n")
	head := r.Commit("second")
	if _, err := os.Stat(filepath.Join(r.Dir(), ".git", "index")); !os.IsNotExist(err) {
		t.Errorf("git staged the commits (.git/index: %v)", err)
	}
	if got := r.ReadFile(head, "b/c.md"); got != "# c\n" {
		t.Errorf("b/c.md at head = %q", got)
	}
}

func TestBlobID_AsGitHashObject(t *testing.T) {
	t.Parallel()
	r := githubtest.NewRepo(t)
	for _, content := range []string{"", "# 학칙\n", strings.Repeat("x", 70000)} {
		r.Write("f", content)
		if got, want := githubtest.BlobID(content), r.Git("hash-object", "f"); got != want {
			t.Errorf("BlobID of %d bytes = %s, git says %s", len(content), got, want)
		}
	}
}
