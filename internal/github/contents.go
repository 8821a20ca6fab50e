package github

import (
	"context"
	"errors"
	"fmt"
	"sync"

	gh "github.com/google/go-github/v66/github"
	"golang.org/x/sync/errgroup"

	"github.com/knue/syncjob/internal/logkey"
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
				s.log.InfoContext(ctx, "archive lacks or alters files, reading blobs", logkey.Commit, commit, logkey.Files, n)
			}
		case fatal(ctx, err):
			return got, failed, err
		default:
			s.log.WarnContext(ctx, "archive unavailable, reading blobs", logkey.Commit, commit, logkey.Files, len(order)-len(got), logkey.Error, s.maskedText(err.Error()))
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

// fatal says whether an error must stop a whole run rather than one file.
func fatal(ctx context.Context, err error) bool {
	return errors.Is(err, policy.ErrRateLimited) || errors.Is(err, policy.ErrConfig) || ctx.Err() != nil
}

// Titles reads what a run keeps of each file at commit: its size and title
// (policy.Title of its bytes, the policy name as fallback), by path, with
// Contents' failures and errors.
func (s *Source) Titles(ctx context.Context, commit string, files []policy.File, maxSize int64) (map[string]policy.Content, map[string]error, error) {
	contents, failed, err := s.Contents(ctx, commit, files)
	out := make(map[string]policy.Content, len(contents))
	for path, body := range contents {
		c := policy.Content{Size: int64(len(body))}
		if c.Size <= maxSize {
			c.Title = policy.Title(body, policy.NameOf(path))
		}
		out[path] = c
	}
	return out, failed, err
}
