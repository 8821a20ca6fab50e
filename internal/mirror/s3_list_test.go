package mirror_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/mirror/mirrortest"
)

// tokenless is a server that says a listing is truncated but gives no
// continuation token, as an S3-compatible store that pages ListObjectsV2
// by marker only does; with empty set, its pages hold no object either.
type tokenless struct {
	next  http.RoundTripper
	empty bool
}

var (
	tokenRE    = regexp.MustCompile(`<NextContinuationToken>[^<]*</NextContinuationToken>`)
	contentsRE = regexp.MustCompile(`(?s)<Contents>.*?</Contents>`)
)

func (d tokenless) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := d.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || !strings.Contains(req.URL.RawQuery, "list-type=2") {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	body = tokenRE.ReplaceAll(body, nil)
	if d.empty {
		body = contentsRE.ReplaceAll(body, nil)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("Content-Length")
	return resp, nil
}

func tokenlessS3(t *testing.T, empty bool) *mirror.S3 {
	t.Helper()
	srv := mirrortest.NewS3Server(t)
	cfg := mirror.WithPageSize(s3Config(srv), 2)
	client := *srv.Client
	client.Transport = tokenless{next: srv.Client.Transport, empty: empty}
	cfg.HTTPClient = &client
	s := mustS3(t, cfg)
	for i := range 5 {
		srv.PutRaw(t, fmt.Sprintf("%sp%d/policy.md", mirror.DefaultPrefix, i), []byte("x"))
	}
	return s
}

// A truncated page without a continuation token is followed after its last
// key: the listing is whole (review: it was taken for the end, and a full
// run took every object past the first page for missing, and never saw a
// foreign one there).
func TestS3List_TruncatedWithoutToken_GoesOnAfterTheLastKey(t *testing.T) {
	t.Parallel()
	s := tokenlessS3(t, false)
	listed, err := s.List(context.Background())
	if err != nil || len(listed) != 5 {
		t.Fatalf("List = %d objects, %v; want all 5", len(listed), err)
	}
}

// A truncated page with neither a token nor a key to go on after is an
// error, not the end of the listing.
func TestS3List_TruncatedWithNothingToGoOn_Error(t *testing.T) {
	t.Parallel()
	s := tokenlessS3(t, true)
	listed, err := s.List(context.Background())
	if !errors.Is(err, mirror.ErrRejected) {
		t.Fatalf("List = %d objects, %v; want ErrRejected", len(listed), err)
	}
}
