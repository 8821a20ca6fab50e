package githubtest

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"testing"
)

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
