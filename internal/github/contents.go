package github

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	gh "github.com/google/go-github/v66/github"
	"golang.org/x/sync/errgroup"

	"github.com/knue/syncjob/internal/policy"
)

// blobConcurrency bounds parallel blob requests (GitHub frowns on bursts).
const blobConcurrency = 4

// Contents reads the files' contents at commit, keyed by path. More files
// than the archive threshold are read from one tarball (two requests: the
// archive link and the download, streamed, only wanted paths kept); fewer,
// one blob request each by blob sha. The tarball is not the repository's
// bytes: .gitattributes may leave a path out (export-ignore) or rewrite it
// (export-subst, eol, ident, filters). So a tarball entry is kept only when
// it hashes to the file's blob sha, and every file the tarball did not
// deliver that way (missing, altered, or all the rest when its download
// failed) is read with one blob request by blob sha.
//
// A file that cannot be read is in the second map (path → error wrapping
// policy.ErrNotFound when GitHub has no such blob). The third value aborts
// the whole read: policy.ErrRateLimited, policy.ErrConfig or the context's
// error; the maps then hold what was read.
func (s *Source) Contents(ctx context.Context, commit string, files []policy.File) (map[string][]byte, map[string]error, error) {
	got := make(map[string][]byte)
	failed := make(map[string]error)
	want := make(map[string]policy.File, len(files))
	var order []policy.File
	for _, f := range files {
		if _, dup := want[f.Path]; !dup {
			want[f.Path] = f
			order = append(order, f)
		}
	}
	if len(order) == 0 {
		return got, failed, nil
	}
	p := &progress{total: len(order), fn: s.progress}

	if s.threshold < 0 || len(order) > s.threshold {
		err := s.fromArchive(ctx, commit, want, got, p)
		switch {
		case err == nil:
			if n := len(order) - len(got); n > 0 {
				s.log.InfoContext(ctx, "archive lacks or alters files, reading blobs", keyCommit, commit, keyFiles, n)
			}
		case fatal(ctx, err):
			return got, failed, err
		default:
			s.log.WarnContext(ctx, "archive unavailable, reading blobs", keyCommit, commit, keyFiles, len(order)-len(got), keyError, s.scrub(err.Error()))
		}
	}

	var rest []policy.File
	for _, f := range order {
		if _, ok := got[f.Path]; !ok {
			rest = append(rest, f)
		}
	}
	err := s.fromBlobs(ctx, rest, got, failed, p)
	return got, failed, err
}

// progress reports files read; its callers hold the lock of the maps.
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

func (s *Source) fromBlobs(ctx context.Context, files []policy.File, got map[string][]byte, failed map[string]error, p *progress) error {
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(blobConcurrency)
	for _, f := range files {
		if gctx.Err() != nil {
			break
		}
		if !isSHA(f.SHA) {
			mu.Lock()
			failed[f.Path] = fmt.Errorf("github: get blob of %s: no blob sha %q: %w", f.Path, f.SHA, policy.ErrNotFound)
			mu.Unlock()
			continue
		}
		g.Go(func() error {
			op := "get blob " + f.SHA
			var data []byte
			err := s.do(gctx, op, func(ctx context.Context) (*gh.Response, error) {
				b, resp, err := s.client.Git.GetBlobRaw(ctx, s.owner, s.repo, f.SHA)
				data = b
				return resp, err
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				err = s.translate(op, err)
				if fatal(gctx, err) {
					return err
				}
				failed[f.Path] = err
				return nil
			}
			got[f.Path] = data
			p.add()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// fromArchive reads the wanted paths from the commit's tarball into got.
// An error is fatal (see fatal) or means "read the rest from blobs".
func (s *Source) fromArchive(ctx context.Context, commit string, want map[string]policy.File, got map[string][]byte, p *progress) error {
	op := "get archive link " + commit
	var link *url.URL
	err := s.do(ctx, op, func(ctx context.Context) (*gh.Response, error) {
		// GetArchiveLink bypasses http.Client (and its timeout): bound each attempt here.
		if s.timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, s.timeout)
			defer cancel()
		}
		u, resp, err := s.client.Repositories.GetArchiveLink(ctx, s.owner, s.repo, gh.Tarball, &gh.RepositoryContentGetOptions{Ref: commit}, 1)
		if err != nil && resp != nil && resp.Response != nil && statusOf(err) == 0 {
			err = &statusError{status: resp.StatusCode, header: resp.Header}
		}
		link = u
		return resp, err
	})
	if err != nil {
		return s.translate(op, err)
	}
	if link == nil || link.String() == "" {
		return s.redact(fmt.Errorf("github: %s: no download location", op))
	}
	if !link.IsAbs() {
		link = s.client.BaseURL.ResolveReference(link)
	}

	op = "download archive " + commit
	err = s.do(ctx, op, func(ctx context.Context) (*gh.Response, error) {
		return nil, s.download(ctx, link, want, got, p)
	})
	if err != nil {
		return s.translate(op, err)
	}
	return nil
}

// download streams the tarball, keeping the wanted regular files whose bytes
// are their blob's (see sameBlob); it stops as soon as every wanted path is read.
func (s *Source) download(ctx context.Context, link *url.URL, want map[string]policy.File, got map[string][]byte, p *progress) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link.String(), nil)
	if err != nil {
		return err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = sanitize(link)
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return &statusError{status: resp.StatusCode, header: resp.Header, message: strings.TrimSpace(string(body))}
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		return fmt.Errorf("read gzip: %w", err)
	}
	tr := tar.NewReader(zr)
	for len(got) < len(want) {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read tar: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		// Every entry sits under one top folder "{owner}-{repo}-{sha7}/".
		_, path, ok := strings.Cut(h.Name, "/")
		if !ok {
			continue
		}
		f, wanted := want[path]
		if !wanted {
			continue
		}
		if _, done := got[path]; done {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		if !sameBlob(f.SHA, data) {
			continue // rewritten on export (export-subst, eol, ...): read the blob
		}
		got[path] = data
		p.add()
	}
	return nil
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

// sanitize drops the query (a signed download token) and user info of a URL.
func sanitize(u *url.URL) string {
	c := *u
	c.RawQuery, c.User, c.Fragment = "", nil, ""
	return c.String()
}
