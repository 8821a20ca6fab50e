package githubtest

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestArchive_KeptTarball_AsGitAnswers archives one commit from three
// repositories that made it: the second is answered from the tarball the
// first kept, and the third, whose attributes leave a file out, by git.
// Each answer equals git archive's.
func TestArchive_KeptTarball_AsGitAnswers(t *testing.T) {
	t.Parallel()
	build := func() (*Repo, string) {
		r := NewRepo(t)
		r.Write("a.md", "# a, kept in the archive cache test\n")
		r.Write("규정/b.md", "# b\n")
		return r, r.Commit("archived")
	}
	first, commit := build()
	second, again := build()
	third, also := build()
	if again != commit || also != commit {
		t.Fatalf("commits %s, %s, %s: want one id", commit, again, also)
	}
	if err := os.MkdirAll(filepath.Join(third.dir, ".git", "info"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(third.dir, ".git", "info", "attributes"), []byte("a.md export-ignore\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prefix := "o-r-" + commit[:7] + "/"
	key := prefix + "\x00" + commit
	for i, r := range []*Repo{first, second, third} {
		var got bytes.Buffer
		if err := r.archive(&got, prefix, commit, true); err != nil {
			t.Fatal(err)
		}
		want := must(t)(r.git(nil, "archive", "--format=tar", "--prefix="+prefix, commit))
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("repository %d: archive differs from git archive's", i+1)
		}
		if _, kept := archives.Load(key); !kept {
			t.Errorf("repository %d: the tarball was not kept", i+1)
		}
	}
}

// TestWriteGenerated_ClientGone_StopsGenerating: once the request's
// context is done (the client hung up), not a byte more of an entry is
// made.
func TestWriteGenerated_ClientGone_StopsGenerating(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	err := writeGenerated(ctx, &out, "o-r-0000000/", []Generated{{Path: "bomb.bin", Size: 64 << 20}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if out.Len() > 4<<10 {
		t.Errorf("wrote %d bytes after the client hung up, want the entry's header at most", out.Len())
	}
}

// TestServeArchive_ReusedWriter_SameBytes downloads one tarball several
// times, with and without extra entries: each answer is the gzip a new
// writer makes of the generated entries and git archive's tarball.
func TestServeArchive_ReusedWriter_SameBytes(t *testing.T) {
	t.Parallel()
	r := NewRepo(t)
	r.Write("a.md", "# a, served again and again\n")
	commit := r.Commit("archived")
	s := NewServer(t, "o", "r", r)
	prefix := "o-r-" + commit[:7] + "/"
	tarball := must(t)(r.git(nil, "archive", "--format=tar", "--prefix="+prefix, commit))
	for i, extra := range [][]Generated{nil, {{Path: "x.bin", Size: 100 << 10, Fill: 'x'}}, nil, {{Path: "y.bin", Size: 10, Fill: 'y'}}} {
		s.ArchiveExtra = extra
		var want bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&want, gzip.BestSpeed)
		if err := writeGenerated(context.Background(), zw, prefix, extra); err != nil {
			t.Fatal(err)
		}
		zw.Write(tarball)
		zw.Close()
		resp, err := s.Client().Get(s.ts.URL + "/_codeload/o/r/tar.gz/" + commit)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("download %d: %d bytes, want the %d of a new gzip writer", i+1, len(got), want.Len())
		}
	}
}
