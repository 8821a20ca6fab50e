package githubtest

import (
	"bytes"
	"strings"
	"testing"
)

// TestRead_FromLooseObjects_AsGitAnswers asks the questions batched takes
// of objects githubtest wrote, git wrote (a merge) and git packed
// (repack): each answer equals a git process's.
func TestRead_FromLooseObjects_AsGitAnswers(t *testing.T) {
	t.Parallel()
	r := NewRepo(t)
	r.Write("a.md", "# a\n")
	r.Write("big.md", strings.Repeat("x", maxCachedRead+10))
	r.Write("규정/깊은/c.md", "# c\n")
	first := r.Commit("first")
	r.Branch("side")
	r.Checkout("side")
	r.Write("b.md", "# b\n")
	r.Commit("side")
	r.Checkout("main")
	merged := r.Merge("side")
	blob := BlobID("# a\n")
	tree := strings.TrimSpace(string(must(t)(r.git(nil, "rev-parse", first+"^{tree}"))))
	var questions [][]string
	for _, id := range []string{first, blob, tree, strings.Repeat("0", 40)} {
		questions = append(questions,
			[]string{"rev-parse", "-q", "--verify", "--end-of-options", id + "^{commit}"},
			[]string{"rev-parse", "-q", "--verify", "--end-of-options", id + "^{tree}"},
			[]string{"cat-file", "-s", id},
			[]string{"cat-file", "blob", id})
	}
	questions = append(questions, []string{"cat-file", "blob", BlobID(strings.Repeat("x", maxCachedRead+10))})
	for _, path := range []string{"a.md", "규정/깊은/c.md", "규정/깊은", "규정/없음.md", "a.md/x"} {
		questions = append(questions,
			[]string{"cat-file", "blob", first + ":" + path},
			[]string{"rev-parse", "--verify", merged + ":" + path})
	}
	ask := func(when string, questions [][]string) {
		for _, q := range questions {
			want, wantErr := r.git(nil, q...)
			got, handled, gotErr := r.batched(q)
			if !handled { // as read does
				got, gotErr = r.git(nil, q...)
			}
			if (gotErr != nil) != (wantErr != nil) || gotErr == nil && !bytes.Equal(got, want) {
				t.Errorf("%s, %s: got %.60q (%v), git says %.60q (%v)", when, strings.Join(q, " "), got, gotErr, want, wantErr)
			}
		}
	}
	if _, _, _, _, ok, _ := r.looseAnswer(merged+"^{tree}", false); !ok {
		t.Error("git's merge commit was not read from its loose object")
	}
	ask("loose", questions)
	r.Git("repack", "-a", "-d", "-q")
	if _, _, _, _, ok, _ := r.looseAnswer(first+"^{commit}", false); ok {
		t.Error("a packed commit was answered as loose")
	}
	ask("packed", questions[len(questions)-8:])
}

func must(t *testing.T) func([]byte, error) []byte {
	return func(b []byte, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

// TestRead_HistoryFromLooseObjects_AsGitAnswers asks history's questions of
// a history with a merge, a criss-cross merge (two best merge bases: git
// answers), a gitlink, a symlink and an executable, loose and then packed:
// each answer equals a git process's.
func TestRead_HistoryFromLooseObjects_AsGitAnswers(t *testing.T) {
	t.Parallel()
	r := NewRepo(t)
	r.Write("규정/a.md", "# a\n")
	r.Write("run.sh", "#!/bin/sh\n")
	r.Chmod("run.sh", true)
	r.Symlink("link.md", "규정/a.md")
	first := r.Commit("first")
	r.Branch("side")
	r.Write("규정/깊은/b.md", "# b\n")
	r.Commit("main 1")
	r.Checkout("side")
	r.Write("c.md", "# c\n")
	side1 := r.Commit("side 1")
	r.Checkout("main")
	merged := r.Merge("side") // main: first, main 1, merge of side 1
	r.Checkout("side")
	crossSide := r.Merge("main") // side merges main 1 too: criss-cross
	r.Checkout("main")
	r.Write("d.md", "# d\n")
	r.Commit("main 2\n\n  a body,  \n\n\n\nwith blank lines  ")
	r.Write("e.md", "# e\n")
	r.Commit("main 3")
	r.Submodule("vendor/sub", first)
	withLink := r.Commit("gitlink")
	ids := []string{first, side1, merged, crossSide, withLink}
	var questions [][]string
	for i, a := range ids {
		questions = append(questions, []string{"ls-tree", "-z", "-l", "--full-tree", "-r", "-t", a, "--"}, []string{"ls-tree", "-z", "-l", "--full-tree", a, "--"})
		questions = append(questions, []string{"log", "-z", logFormat, "-1", a, "--"})
		for _, b := range ids[i+1:] {
			questions = append(questions, []string{"rev-list", "--count", a + ".." + b, "--"}, []string{"rev-list", "--count", b + ".." + a, "--"}, []string{"merge-base", a, b},
				[]string{"log", "-z", logFormat, "--reverse", "--topo-order", a + ".." + b, "--"})
		}
	}
	tree := strings.TrimSpace(string(must(t)(r.git(nil, "rev-parse", withLink+"^{tree}"))))
	questions = append(questions, []string{"ls-tree", "-z", "-l", "--full-tree", "-r", "-t", tree, "--"})
	ask := func(when string, questions [][]string) (answered int) {
		for _, q := range questions {
			want, wantErr := r.git(nil, q...)
			got, handled, gotErr := r.history(q)
			if handled {
				answered++
			} else {
				got, gotErr = r.git(nil, q...)
			}
			if (gotErr != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
				t.Errorf("%s, %s: got %q (%v), git says %q (%v)", when, strings.Join(q, " "), got, gotErr, want, wantErr)
			}
		}
		return answered
	}
	if n := ask("loose", questions); n < len(questions)*3/4 {
		t.Errorf("answered %d of %d questions from loose objects", n, len(questions))
	}
	if _, handled, _ := r.history([]string{"log", "-z", logFormat, "--reverse", "--topo-order", merged + ".." + withLink, "--"}); !handled {
		t.Error("the log of a line of commits was not answered from loose objects")
	}
	r.Git("repack", "-a", "-d", "-q")
	if n := ask("packed", questions[:8]); n != 0 {
		t.Errorf("answered %d questions of packed objects", n)
	}
}

// TestLooseObject_KnownObjectOnlyWhereLoose reads objects another
// repository wrote and read: they are known by id, but a repository
// answers only for its own loose objects, and answers them as git does.
func TestLooseObject_KnownObjectOnlyWhereLoose(t *testing.T) {
	t.Parallel()
	r, other := NewRepo(t), NewRepo(t)
	r.Write("a.md", "# known elsewhere, not here\n")
	commit := r.Commit("first")
	tree := strings.TrimSpace(string(must(t)(r.git(nil, "rev-parse", commit+"^{tree}"))))
	blob := BlobID("# known elsewhere, not here\n")
	for _, id := range []string{commit, tree, blob} {
		kind, size, data, ok, err := r.looseObject(id, true)
		if !ok || err != nil {
			t.Fatalf("%s: not read (%v)", id, err)
		}
		if want := strings.TrimSpace(string(must(t)(r.git(nil, "cat-file", "-t", id)))); kind != want {
			t.Errorf("%s: kind %q, git says %q", id, kind, want)
		}
		if want := must(t)(r.git(nil, "cat-file", kind, id)); size != len(want) || !bytes.Equal(data, want) {
			t.Errorf("%s: %d bytes %.40q, git says %d bytes %.40q", id, size, data, len(want), want)
		}
		if _, _, _, ok, err := other.looseObject(id, false); ok || err != nil {
			t.Errorf("%s: answered (%v) by a repository without it", id, err)
		}
	}
}
