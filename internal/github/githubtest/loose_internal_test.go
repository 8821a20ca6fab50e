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
	first := r.Commit("first")
	r.Branch("side")
	r.Checkout("side")
	r.Write("b.md", "# b\n")
	r.Commit("side")
	r.Checkout("main")
	merged := r.Merge("side")
	packed := r.EmptyCommits(2, "packed")
	blob := BlobID("# a\n")
	tree := strings.TrimSpace(string(must(t)(r.git(nil, "rev-parse", first+"^{tree}"))))
	var questions [][]string
	for _, id := range []string{first, merged, packed, blob, tree, strings.Repeat("0", 40)} {
		questions = append(questions,
			[]string{"rev-parse", "-q", "--verify", "--end-of-options", id + "^{commit}"},
			[]string{"rev-parse", "-q", "--verify", "--end-of-options", id + "^{tree}"},
			[]string{"cat-file", "-s", id},
			[]string{"cat-file", "blob", id})
	}
	questions = append(questions, []string{"cat-file", "blob", first + ":a.md"}, []string{"cat-file", "blob", BlobID(strings.Repeat("x", maxCachedRead+10))})
	ask := func(when string) {
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
	ask("loose")
	r.Git("repack", "-a", "-d", "-q")
	if _, _, _, _, ok, _ := r.looseAnswer(first+"^{commit}", false); ok {
		t.Error("a packed commit was answered as loose")
	}
	ask("packed")
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
