package github

import (
	"archive/tar"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	gh "github.com/google/go-github/v66/github"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/redact"
)

// errOverBudget: the archive holds more bytes than its budget (see
// archiveBudget); the files it did not deliver are read as blobs.
var errOverBudget = errors.New("archive holds more than its budget of decompressed bytes")

// fromArchive reads the files from the commit's tarball, delivering those
// whose entries are their blobs. An error is fatal (see fatal) or means
// "read the rest from blobs".
// A prefetch of the commit's archive (PrefetchArchive) gives its link and
// its answer to the first attempt.
func (s *Source) fromArchive(ctx context.Context, commit string, files []policy.File, r *reading) error {
	pre := s.ahead.take(commit)
	if pre != nil {
		defer pre.drop()
	}
	link, ok, err := pre.prefetchedLink(ctx)
	if !ok {
		link, err = s.archiveLink(ctx, commit)
	}
	if err != nil {
		return err
	}
	op := "download archive " + commit
	want := r.files // every file of the read: one delivered already (oversized) is skipped as done
	budget := s.archiveBudget(commit, files, r.limit)
	err = s.do(ctx, op, func(ctx context.Context) (*gh.Response, error) {
		if resp := pre.answer(); resp != nil {
			return nil, s.readPrefetched(ctx, pre, resp, want, budget, r)
		}
		return nil, s.download(ctx, link, want, budget, r)
	})
	if err != nil {
		return s.archiveError(op, err)
	}
	return nil
}

// archiveLink asks the API where the commit's tarball is (the Location of
// its redirect), retrying transient failures.
func (s *Source) archiveLink(ctx context.Context, commit string) (*url.URL, error) {
	op := "get archive link " + commit
	var link *url.URL
	err := s.do(ctx, op, func(ctx context.Context) (resp *gh.Response, err error) {
		link, resp, err = s.getArchiveLink(ctx, commit)
		return resp, err
	})
	if err != nil {
		return nil, s.archiveError(op, err)
	}
	return link, nil
}

// getArchiveLink makes one request for the archive link without following
// its redirect. It is not go-github's GetArchiveLink, which drops the body
// of an error answer: the body is what tells a secondary rate limit from a
// refusal, so an error answer is typed by gh.CheckResponse here.
func (s *Source) getArchiveLink(ctx context.Context, commit string) (*url.URL, *gh.Response, error) {
	req, err := s.client.NewRequest(http.MethodGet, fmt.Sprintf("repos/%s/%s/tarball/%s", s.owner, s.repo, commit), nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := s.links.Do(req.WithContext(ctx))
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	ghResp := &gh.Response{Response: resp}
	if resp.StatusCode < 300 || resp.StatusCode >= 400 {
		if err := gh.CheckResponse(resp); err != nil {
			return nil, ghResp, err
		}
		return nil, ghResp, errors.New("no download location")
	}
	link, err := resp.Location()
	if err != nil {
		return nil, ghResp, fmt.Errorf("no download location: %w", err)
	}
	return link, ghResp, nil
}

// archiveError translates a failure of the archive: a rate limit (and the
// context) ends the run as anywhere; anything else, a 403 or 404 included,
// only makes the archive unavailable and is never a configuration error:
// the blob requests that follow are the API's answer to this token, and
// say so properly if it is refused.
func (s *Source) archiveError(op string, err error) error {
	if rateLimitOf(err, s.now()) != nil {
		return s.translate(op, err)
	}
	return s.masked(fmt.Errorf("github: %s: archive unavailable: %w", op, concise(err)))
}

// archiveBudget is how many decompressed bytes the archive may hold: the
// wanted files (their size, or limit+1 when unknown: more is not read)
// plus s.slack for everything else (other files, tar headers) or, when Tree
// listed the commit and says more, the tree's own total (every blob's size
// and tar's overhead per entry): a repository of any size is read at once,
// while a gzip bomb (entries the tree does not list) is abandoned. Skipping
// an unwanted entry still inflates it, so a bomb costs at most this.
func (s *Source) archiveBudget(commit string, files []policy.File, limit int64) int64 {
	budget := s.slack
	for _, f := range files {
		n := limit + 1
		if f.Size >= 0 && f.Size <= limit {
			n = f.Size
		}
		if budget > noLimit-n {
			return noLimit
		}
		budget += n
	}
	if total, ok := s.listed.archiveOf(commit); ok {
		return max(budget, total)
	}
	return budget
}

// download streams the tarball at link into untar, within the archive
// timeout and the idle timeout. A download that stalls or takes too long
// is not retried: blob reads are its retry.
func (s *Source) download(ctx context.Context, link *url.URL, want wantedFiles, budget int64, r *reading) error {
	ctx, w := s.watched(ctx, s.archiveTimeout)
	defer w.stop()
	return s.downloadError(w.why(ctx, s.fetchArchive(ctx, w, link, want, budget, r)))
}

// downloadError is err, made final when the download stalled or took too
// long: blob reads are its retry.
func (s *Source) downloadError(err error) error {
	if errors.Is(err, errStalled) || errors.Is(err, errTooLong) {
		return &final{err: err}
	}
	return err
}

func (s *Source) fetchArchive(ctx context.Context, w *watch, link *url.URL, want wantedFiles, budget int64, r *reading) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link.String(), nil)
	if err != nil {
		return err
	}
	resp, err := s.downloads.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = redact.URL(link)
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// read past the 1 KiB kept, so that a secret the answer echoes
		// across that edge is masked before the cut (redact.Cut)
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<10))
		return &statusError{status: resp.StatusCode, header: resp.Header, message: redact.Cut(strings.TrimSpace(string(body)), 1<<10, s.secrets...)}
	}
	return untar(w.body(resp.Body), want, budget, r)
}

// untar reads a gzipped tarball, delivering each wanted regular file whose
// entry holds its blob's bytes (see sameBlob); it stops as soon as every
// wanted file is delivered. An entry over the size limit, or whose size is
// not the one the tree gave, is skipped unread: the blob decides (a
// .gitattributes rule may make the archive's size differ from the blob's,
// so the archive's size is not trusted unless the blob cannot be read). It
// inflates at most budget bytes (errOverBudget), and gives up before an
// entry whose header says it would pass them.
func untar(body io.Reader, want wantedFiles, budget int64, r *reading) error {
	zr, err := gzip.NewReader(body)
	if err != nil {
		return fmt.Errorf("read gzip: %w", err)
	}
	in := &budgetReader{r: zr, left: budget}
	tr := tar.NewReader(in)
	var buf []byte
	left := 0
	for _, f := range want.files { // distinct paths (read)
		if !r.isDone(f.Path) {
			left++
		}
	}
	for left > 0 {
		h, err := tr.Next()
		switch {
		case err == io.EOF:
			return nil
		case err != nil:
			return fmt.Errorf("read tar: %w", err)
		case h.Size > in.left:
			return fmt.Errorf("entry %q of %d bytes: %w", h.Name, h.Size, errOverBudget)
		}
		// Every entry sits under one top folder "{owner}-{repo}-{sha7}/".
		_, path, ok := strings.Cut(h.Name, "/")
		f, wanted := want.get(path)
		if h.Typeflag != tar.TypeReg || !ok || !wanted || r.isDone(path) {
			continue
		}
		if h.Size > r.limit || (f.Size >= 0 && h.Size != f.Size) {
			if !isSHA(f.SHA) { // no blob to ask: the archive's size is all there is
				r.deliver(f.Path, h.Size, nil)
				left--
			}
			continue
		}
		if buf, err = readEntry(tr, buf, h.Size); err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		if sameBlob(f.SHA, buf) { // else rewritten on export (export-subst, eol, ...): read the blob
			r.deliver(f.Path, h.Size, buf) // the file's path, not a part of the entry's name that would keep the whole name
			left--
		}
	}
	return nil
}

// wantedFiles are the files an archive read looks for, by path: their
// indexes sorted by path, not a map of copies (at 50,000 files 3.5 MB) nor
// a map of indexes (at 200,000 files 6.7 MB), held through the download.
type wantedFiles struct {
	files  []policy.File
	byPath []int32
}

func newWantedFiles(files []policy.File) wantedFiles {
	byPath := make([]int32, len(files))
	for i := range byPath {
		byPath[i] = int32(i)
	}
	slices.SortFunc(byPath, func(a, b int32) int { return cmp.Or(strings.Compare(files[a].Path, files[b].Path), cmp.Compare(a, b)) })
	return wantedFiles{files: files, byPath: byPath}
}

// firstOfEachPath marks, by index, the first file of each path, or is
// nil when no path is there twice.
func (w wantedFiles) firstOfEachPath() []bool {
	var first []bool
	for k := 1; k < len(w.byPath); k++ {
		if w.files[w.byPath[k]].Path != w.files[w.byPath[k-1]].Path {
			continue
		}
		if first == nil {
			first = make([]bool, len(w.files))
			for i := range first {
				first[i] = true
			}
		}
		first[w.byPath[k]] = false // byPath orders a path's files by index: not the first
	}
	return first
}

func (w wantedFiles) get(path string) (policy.File, bool) {
	i, ok := w.index(path)
	if !ok {
		return policy.File{}, false
	}
	return w.files[i], true
}

// index is the index in files of the file of path.
func (w wantedFiles) index(path string) (int32, bool) {
	i, ok := slices.BinarySearchFunc(w.byPath, path, func(j int32, path string) int { return strings.Compare(w.files[j].Path, path) })
	if !ok {
		return 0, false
	}
	return w.byPath[i], true
}

// readEntry reads the size bytes of an entry into buf, grown as needed.
func readEntry(r io.Reader, buf []byte, size int64) ([]byte, error) {
	if int64(cap(buf)) < size {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	_, err := io.ReadFull(r, buf)
	return buf, err
}

// budgetReader reads at most left bytes, then fails with errOverBudget.
type budgetReader struct {
	r    io.Reader
	left int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errOverBudget
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// sameBlob says whether data is the content of the blob sha, i.e. hashes to
// it as git does (sha1 of "blob <len>\x00<content>"). A file without a blob
// sha cannot be checked, so its archive bytes are taken as they are.
func sameBlob(sha string, data []byte) bool {
	if !isSHA(sha) {
		return true
	}
	h := sha1.New()
	h.Write([]byte("blob " + strconv.Itoa(len(data)) + "\x00"))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil)) == sha
}
