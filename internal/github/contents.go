package github

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"sync"

	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/strs"
)

// Titles reads what a run keeps of each file at commit: its size and, when
// it is at most maxSize bytes, its title (policy.Title of its bytes, the
// policy name as fallback), by path. Files are read one at a time as they
// stream (one per concurrent blob request, blobConcurrency of them), and
// never more than maxSize+1 bytes of one: a file the tree says is larger
// is not downloaded at all (its Size is the tree's), a blob download is
// cut after maxSize+1 bytes (its Size is the answer's Content-Length, else
// maxSize+1), and an archive entry over maxSize is skipped unread (see
// Contents for how the archive is read).
//
// A file that cannot be read is in the second map (path → error wrapping
// policy.ErrNotFound when GitHub has no such blob). The error aborts the
// whole read: policy.ErrRateLimited, policy.ErrConfig or the context's
// error; the maps then hold what was read.
func (s *Source) Titles(ctx context.Context, commit string, files []policy.File, maxSize int64) (map[string]policy.Content, map[string]error, error) {
	return s.TitlesWith(ctx, commit, files, maxSize, nil)
}

// TitlesWith is Titles that also hands each file it reads whole (at most
// maxSize bytes) to each, as the file streams by: the content mirror
// uploads from the same read that finds titles. data is valid only during
// the call and calls are never concurrent, so the read holds no more than
// the files in flight; each may block to bound the work it starts. each may
// be nil.
func (s *Source) TitlesWith(ctx context.Context, commit string, files []policy.File, maxSize int64, each func(path string, data []byte)) (map[string]policy.Content, map[string]error, error) {
	out := make(map[string]policy.Content, len(files))
	failed, err := s.TitlesEach(ctx, commit, files, maxSize, each, func(path string, c policy.Content) { out[path] = c })
	return out, failed, err
}

// TitlesEach is TitlesWith that hands each file's Content to put as it is
// read instead of keeping a map of them: a run writes each title into its
// plan item (differ.Titling). put is called once a file, never
// concurrently; each may be nil.
func (s *Source) TitlesEach(ctx context.Context, commit string, files []policy.File, maxSize int64, each func(path string, data []byte), put func(path string, c policy.Content)) (map[string]error, error) {
	var titles strs.Chunks
	return s.read(ctx, commit, files, max(maxSize, 0), func(path string, size int64, data []byte) {
		c := policy.Content{Size: size}
		if data != nil {
			c.Title = titleOf(path, data, &titles)
			if each != nil {
				each(path, data)
			}
		}
		put(path, c)
	})
}

// titleOf is the title of the file at path: its policy name itself when
// the title is the name (a heading that repeats the file's name, or none),
// which is a part of path and takes no bytes of its own; else a copy in
// titles' chunks (data is the read's, let go after the call). 200,000
// titles of their own took 7 MB (docs/bench.md, "How we got here",
// "Memory, fifth pass").
func titleOf(path string, data []byte, titles *strs.Chunks) string {
	name := policy.NameOf(path)
	if title := policy.Title(data, name); title != name {
		return titles.Join(title, "")
	}
	return name
}

// Contents reads the files' whole contents at commit, keyed by path, with
// Titles' failures and errors but no size limit: for tests and tools that
// need the bytes of small files; a run reads Titles.
//
// More files than the archive threshold are read from one tarball (two
// requests: the archive link and the download, streamed, only wanted paths
// kept); fewer, one blob request each by blob sha. The tarball is not the
// repository's bytes: .gitattributes may leave a path out (export-ignore)
// or rewrite it (export-subst, eol, ident, filters). So a tarball entry is
// kept only when it hashes to the file's blob sha, and every file the
// tarball did not deliver that way (missing, altered, over the size limit,
// or all the rest when its download failed or passed its budget of
// decompressed bytes: see archiveBudget) is read with one blob
// request by blob sha.
func (s *Source) Contents(ctx context.Context, commit string, files []policy.File) (map[string][]byte, map[string]error, error) {
	got := make(map[string][]byte, len(files))
	failed, err := s.read(ctx, commit, files, noLimit, func(path string, _ int64, data []byte) {
		got[path] = bytes.Clone(data)
	})
	return got, failed, err
}

// noLimit is the size limit of Contents: none (limit+1 must not overflow).
const noLimit = math.MaxInt64 - 1

// sink receives one file read: size is its exact size when known (the
// tree, a Content-Length, a tar header), else limit+1; data holds its bytes
// when size is at most the limit, else it is nil. data is valid only during
// the call. Calls are never concurrent.
type sink func(path string, size int64, data []byte)

// read is the one streaming core of Titles and Contents: it hands every
// file of files at commit to put once, or records why it could not, and
// returns those failures and the error that aborts the whole read.
func (s *Source) read(ctx context.Context, commit string, files []policy.File, limit int64, put sink) (map[string]error, error) {
	todo, wanted := distinctWanted(files)
	r := newReadingOf(wanted, limit, put)
	r.progress = progress{total: len(todo), fn: s.progress}
	todo = r.deliverOversized(todo)
	if len(todo) == 0 {
		return r.failed, nil
	}
	if s.threshold < 0 || len(todo) > s.threshold {
		err := s.fromArchive(ctx, commit, todo, r)
		switch {
		case err == nil:
			if n := len(r.pending(todo)); n > 0 {
				s.log.InfoContext(ctx, "archive lacks or alters files, reading blobs", logkey.Commit, commit, logkey.Files, n)
			}
		case fatal(ctx, err):
			return r.failed, err
		default:
			s.log.WarnContext(ctx, "archive unavailable, reading blobs", logkey.Commit, commit, logkey.Files, len(r.pending(todo)), logkey.Error, s.maskedText(err.Error()))
		}
	}
	return r.failed, s.fromBlobs(ctx, r.pending(todo), r)
}

// reading is the state of one read, shared by the archive and the blob
// requests.
type reading struct {
	limit int64
	put   sink
	files wantedFiles // the files read, found by path

	mu sync.Mutex
	// done says which of files were delivered, by index: not a map of
	// every path (200,000 files: 6.6 MB held through the read); other
	// paths, none in a run, in more.
	done     []bool
	more     map[string]bool
	failed   map[string]error
	progress progress
}

// newReading is the state of a read of files (distinct paths).
func newReading(files []policy.File, limit int64, put sink) *reading {
	return newReadingOf(newWantedFiles(files), limit, put)
}

// newReadingOf is newReading of files already found by path.
func newReadingOf(files wantedFiles, limit int64, put sink) *reading {
	return &reading{limit: limit, put: put, files: files, done: make([]bool, len(files.files)), failed: map[string]error{}}
}

// markDone marks path delivered and says whether it already was; its
// caller holds the lock.
func (r *reading) markDone(path string) (was bool) {
	if i, ok := r.files.index(path); ok {
		was, r.done[i] = r.done[i], true
		return was
	}
	if r.more == nil {
		r.more = map[string]bool{}
	}
	was, r.more[path] = r.more[path], true
	return was
}

// deliver hands a file to the sink once.
func (r *reading) deliver(path string, size int64, data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.markDone(path) {
		return
	}
	if size > r.limit {
		data = nil
	}
	r.put(path, size, data)
	r.progress.add()
}

func (r *reading) fail(path string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed[path] = err
}

func (r *reading) isDone(path string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i, ok := r.files.index(path); ok {
		return r.done[i]
	}
	return r.more[path]
}

// pending is the files not delivered yet.
func (r *reading) pending(files []policy.File) []policy.File {
	var rest []policy.File
	for _, f := range files {
		if !r.isDone(f.Path) {
			rest = append(rest, f)
		}
	}
	return rest
}

// distinct is files without a second file of the same path: files itself
// when it has none, so that a read of 200,000 files holds no second list
// of them.
func distinct(files []policy.File) []policy.File {
	todo, _ := distinctWanted(files)
	return todo
}

// distinctWanted is distinct, and its files found by path. Duplicates are
// found in the index by path the read makes anyway, not with a map of
// every path (200,000 paths: some 7 MB where the read starts).
func distinctWanted(files []policy.File) ([]policy.File, wantedFiles) {
	w := newWantedFiles(files)
	first := w.firstOfEachPath()
	if first == nil {
		return files, w
	}
	var rest []policy.File
	for i, f := range files {
		if first[i] {
			rest = append(rest, f)
		}
	}
	return rest, newWantedFiles(rest)
}

// deliverOversized delivers the files the tree says are over the limit,
// without a request, and returns the others: files itself when none is
// over it (no second list of every file to read).
func (r *reading) deliverOversized(files []policy.File) []policy.File {
	if !slices.ContainsFunc(files, func(f policy.File) bool { return f.Size > r.limit }) {
		return files
	}
	var rest []policy.File
	for _, f := range files {
		if f.Size > r.limit {
			r.deliver(f.Path, f.Size, nil)
			continue
		}
		rest = append(rest, f)
	}
	return rest
}

// progress reports files read; its callers hold the reading's lock.
type progress struct {
	done, total int
	fn          func(done, total int)
}

func (p *progress) add() {
	p.done++
	if p.fn != nil {
		p.fn(p.done, p.total)
	}
}

// fatal says whether an error must stop a whole run rather than one file.
func fatal(ctx context.Context, err error) bool {
	return errors.Is(err, policy.ErrRateLimited) || errors.Is(err, policy.ErrConfig) || ctx.Err() != nil
}
