package githubtest

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Generated is an entry the fake adds to every tarball it serves, before
// the repository's own, its Size bytes of Fill made as they are written: a
// gzip bomb (a huge entry that compresses to almost nothing) or a large
// unwanted file, without a file of that size on disk or in memory.
type Generated struct {
	Path string // below the archive's top folder, like a repository path
	Size int64
	Fill byte
}

// serveBlob answers a blob by sha. The raw media type streams the content
// from git with its Content-Length (a blob larger than memory is never held
// whole); the JSON form carries it base64-encoded, as GitHub does.
func (s *Server) serveBlob(w http.ResponseWriter, r *http.Request, sha string) {
	id, ok := s.repo.resolve(sha, "blob")
	if !ok || len(sha) < 40 {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	if strings.Contains(r.Header.Get("Accept"), "raw") {
		size, err := s.repo.read("cat-file", "-s", id)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(string(size)), 10, 64)
		var small []byte
		if n <= maxCachedRead {
			if small, err = s.repo.read("cat-file", "blob", id); err != nil {
				writeError(w, http.StatusInternalServerError, err.Error())
				return
			}
		}
		w.Header().Set("Content-Type", "application/vnd.github.raw")
		w.Header().Set("Content-Length", strings.TrimSpace(string(size)))
		w.WriteHeader(http.StatusOK)
		if n <= maxCachedRead {
			_, _ = w.Write(small)
			return
		}
		_ = s.repo.gitTo(w, "cat-file", "blob", id) // a client that hangs up ends it
		return
	}
	content, err := s.repo.read("cat-file", "blob", id)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	enc := base64.StdEncoding.EncodeToString(content)
	var b strings.Builder
	for len(enc) > 60 {
		b.WriteString(enc[:60])
		b.WriteByte('\n')
		enc = enc[60:]
	}
	b.WriteString(enc)
	writeJSON(w, map[string]any{"sha": id, "size": len(content), "url": s.api("git/blobs/%s", id), "content": b.String(), "encoding": "base64"})
}

func (s *Server) serveArchiveLink(w http.ResponseWriter, ref string) {
	if ref == "" {
		ref = "HEAD"
	}
	sha, ok := s.repo.resolve(ref, "commit")
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	w.Header().Set("Location", s.ts.URL+"/_codeload/"+s.owner+"/"+s.name+"/tar.gz/"+sha)
	w.WriteHeader(http.StatusFound)
}

// serveArchive streams the commit's tarball as git archive makes it, gzipped
// on the fly (chunked, no Content-Length, like codeload), after the
// Generated entries. Nothing is held whole: a client that stops reading
// stops the stream.
func (s *Server) serveArchive(w http.ResponseWriter, r *http.Request, sha string) {
	id, ok := s.repo.resolve(sha, "commit")
	if !ok || id != sha {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	extra := s.ArchiveExtra
	prefix := s.owner + "-" + s.name + "-" + sha[:7] + "/"
	w.Header().Set("Content-Type", "application/x-gzip")
	w.Header().Set("Content-Disposition", "attachment; filename="+s.owner+"-"+s.name+"-"+sha[:7]+".tar.gz")
	w.WriteHeader(http.StatusOK)
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(w)
	defer zw.Reset(io.Discard) // holds no answer while pooled
	if err := writeGenerated(r.Context(), zw, prefix, extra); err != nil {
		return
	}
	if err := s.repo.gitTo(zw, "archive", "--format=tar", "--prefix="+prefix, sha); err != nil {
		return
	}
	_ = zw.Close()
}

// gzipWriters are reused by serveArchive: a new one allocates some 700 KB
// of tables, which the race detector shadows afresh; a reset one writes
// the same bytes.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	return zw
}}

// writeGenerated writes the entries to a tar stream that goes on (no end
// marker: git archive's entries follow). It stops when ctx is done: a
// client that hung up reads no more, and an entry of a gigabyte costs a
// second to compress.
func writeGenerated(ctx context.Context, w io.Writer, prefix string, entries []Generated) error {
	tw := tar.NewWriter(w)
	for _, g := range entries {
		h := &tar.Header{
			Typeflag: tar.TypeReg, Name: prefix + g.Path, Mode: 0o644, Size: g.Size,
			ModTime: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), Format: tar.FormatPAX,
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, untilDone{ctx, io.LimitReader(fill(g.Fill), g.Size)}); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// untilDone reads r until ctx is done, then fails with its error.
type untilDone struct {
	ctx context.Context
	r   io.Reader
}

func (u untilDone) Read(p []byte) (int, error) {
	if err := u.ctx.Err(); err != nil {
		return 0, err
	}
	return u.r.Read(p)
}

// fill is an endless reader of one byte.
type fill byte

func (f fill) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	p[0] = byte(f)
	for n := 1; n < len(p); n *= 2 {
		copy(p[n:], p[:n])
	}
	return len(p), nil
}

// Fill returns size bytes of b, made as they are read: content for
// Repo.WriteFrom larger than a test would hold in memory.
func Fill(b byte, size int64) io.Reader { return io.LimitReader(fill(b), size) }

// ArchiveEntries lists the regular-file paths (without the prefix folder) of
// a tar.gz archive; a helper for tests of the archive itself.
func ArchiveEntries(r io.Reader) ([]string, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	var paths []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return paths, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		_, p, _ := strings.Cut(h.Name, "/")
		paths = append(paths, p)
	}
}
