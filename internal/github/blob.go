package github

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	gh "github.com/google/go-github/v66/github"
	"golang.org/x/sync/errgroup"

	"github.com/knue/syncjob/internal/policy"
)

// blobConcurrency bounds parallel blob requests (GitHub frowns on bursts).
const blobConcurrency = 4

// errCorrupt is a blob answer whose bytes do not hash to the blob's sha (a
// body cut short without a Content-Length); it is retried.
var errCorrupt = errors.New("content does not hash to the blob sha")

// fromBlobs reads each file with one blob request by blob sha, at most
// blobConcurrency at a time, delivering or failing each.
func (s *Source) fromBlobs(ctx context.Context, files []policy.File, r *reading) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(blobConcurrency)
	for _, f := range files {
		if gctx.Err() != nil {
			break
		}
		if !isSHA(f.SHA) {
			r.fail(f.Path, fmt.Errorf("github: get blob of %s: no blob sha %q: %w", f.Path, f.SHA, policy.ErrNotFound))
			continue
		}
		g.Go(func() error {
			size, data, err := s.blob(gctx, f.SHA, r.limit)
			switch {
			case err == nil:
				r.deliver(f.Path, size, data)
			case fatal(gctx, err):
				return err
			default:
				r.fail(f.Path, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// blob reads the blob sha, retrying transient failures: its size, and its
// bytes when the size is at most limit (else nil).
func (s *Source) blob(ctx context.Context, sha string, limit int64) (int64, []byte, error) {
	op := "get blob " + sha
	var (
		size int64
		data []byte
	)
	err := s.do(ctx, op, func(ctx context.Context) (resp *gh.Response, err error) {
		size, data, resp, err = s.getBlob(ctx, sha, limit)
		return resp, err
	})
	if err != nil {
		return 0, nil, s.translate(op, err)
	}
	return size, data, nil
}

// getBlob makes one raw blob request and reads at most limit+1 bytes of
// the answer; none when its Content-Length is over the limit. A stall (see
// watched) fails it with errStalled.
func (s *Source) getBlob(ctx context.Context, sha string, limit int64) (int64, []byte, *gh.Response, error) {
	ctx, w := s.watched(ctx, 0)
	defer w.stop()
	size, data, resp, err := s.readBlob(ctx, w, sha, limit)
	return size, data, resp, w.why(ctx, err)
}

func (s *Source) readBlob(ctx context.Context, w *watch, sha string, limit int64) (int64, []byte, *gh.Response, error) {
	req, err := s.client.NewRequest(http.MethodGet, fmt.Sprintf("repos/%s/%s/git/blobs/%s", s.owner, s.repo, sha), nil)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Accept", "application/vnd.github.v3.raw")
	resp, err := s.client.BareDo(ctx, req)
	if err != nil {
		return 0, nil, resp, err
	}
	defer resp.Body.Close()
	if resp.ContentLength > limit {
		return resp.ContentLength, nil, resp, nil
	}
	var buf bytes.Buffer
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength))
	}
	if _, err := buf.ReadFrom(io.LimitReader(w.body(resp.Body), limit+1)); err != nil {
		return 0, nil, resp, err
	}
	if n := int64(buf.Len()); n > limit {
		return max(resp.ContentLength, n), nil, resp, nil
	}
	if !sameBlob(sha, buf.Bytes()) {
		return 0, nil, resp, errCorrupt
	}
	return int64(buf.Len()), buf.Bytes(), resp, nil
}
