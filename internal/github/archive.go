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

	gh "github.com/google/go-github/v66/github"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/redact"
)

// fromArchive reads the wanted paths from the commit's tarball into got.
// An error is fatal (see fatal) or means "read the rest from blobs".
func (s *Source) fromArchive(ctx context.Context, commit string, want map[string]policy.File, got map[string][]byte, p *progress) error {
	op := "get archive link " + commit
	var link *url.URL
	err := s.do(ctx, op, func(ctx context.Context) (*gh.Response, error) {
		// GetArchiveLink bypasses http.Client (and its timeout): bound each attempt here.
		if s.http.Timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, s.http.Timeout)
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
		return s.masked(fmt.Errorf("github: %s: no download location", op))
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
			ue.URL = redact.URL(link)
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
