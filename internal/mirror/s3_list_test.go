package mirror_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
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

// s3Listing answers ListObjectsV2 as S3 does for keys: with
// encoding-type=url each key URL-encoded (and EncodingType in the answer),
// else in XML text with characters XML 1.0 cannot hold as character
// references (&#x1;), which an XML 1.0 parser such as Go's refuses.
type s3Listing struct{ keys []string }

func (l s3Listing) RoundTrip(req *http.Request) (*http.Response, error) {
	encoded := req.URL.Query().Get("encoding-type") == "url"
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>policies-test</Name><IsTruncated>false</IsTruncated>`)
	if encoded {
		b.WriteString(`<EncodingType>url</EncodingType>`)
	}
	for _, k := range l.keys {
		b.WriteString(`<Contents><Key>`)
		if encoded {
			b.WriteString(url.QueryEscape(k))
		} else {
			for _, r := range k {
				switch {
				case r < 0x20 || r == '&' || r == '<' || r == '>':
					fmt.Fprintf(&b, "&#x%X;", r)
				default:
					b.WriteRune(r)
				}
			}
		}
		b.WriteString(`</Key><ETag>"d41d8cd98f00b204e9800998ecf8427e"</ETag><Size>0</Size></Contents>`)
	}
	b.WriteString(`</ListBucketResult>`)
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/xml"}}, Body: io.NopCloser(strings.NewReader(b.String())), Request: req}, nil
}

// A key under the prefix holding a control character — a foreign object,
// or the object of a policy whose file name holds one (git allows it;
// policy.NameOf, Render and ValidateKey keep it) — comes back in S3's XML
// as &#x1;, which the SDK's XML 1.0 parser refuses: every List failed, so
// every full run (the daily reconcile, and every run after an unclean one)
// failed, and nothing the operator could see named the key (review). ListObjectsV2
// with encoding-type=url (keys decoded with url.QueryUnescape when the
// answer says EncodingType url) lists it.
func TestS3List_KeyWithAControlCharacter_Listed(t *testing.T) {
	t.Parallel()
	keys := []string{"policies/a\x01b/policy.md", "policies/a b+c%d/policy.md", "policies/학칙/policy.md"}
	cfg := mirror.Config{Bucket: mirrortest.Bucket, Endpoint: "https://acct.r2.example", AccessKeyID: "AKIAX", SecretAccessKey: "s",
		HTTPClient: &http.Client{Transport: s3Listing{keys: keys}}, MaxRetries: 1}
	listed, err := mustS3(t, cfg).List(context.Background())
	if err != nil {
		t.Fatalf("List: %v; want the %d keys", err, len(keys))
	}
	var got []string
	for _, l := range listed {
		got = append(got, l.Key)
	}
	slices.Sort(keys)
	if !slices.Equal(got, keys) {
		t.Fatalf("List = %q, want %q", got, keys)
	}
}

// R2's bucket page shows the S3 URL with the bucket as its path. Taken as
// CONTENT_ENDPOINT, every key landed under that path, outside the prefix,
// and the run failed every time with "404 NoSuchKey" (review): it is a
// configuration error naming the setting.
func TestS3Config_EndpointWithAPath_Refused(t *testing.T) {
	t.Parallel()
	srv := mirrortest.NewS3Server(t)
	for _, ep := range []string{srv.URL + "/" + mirrortest.Bucket, srv.URL + "/x/"} {
		cfg := s3Config(srv)
		cfg.Endpoint = ep
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "CONTENT_ENDPOINT") || !strings.Contains(err.Error(), "path") {
			t.Errorf("endpoint %s: %v; want refused, naming CONTENT_ENDPOINT and its path", ep, err)
		}
	}
	for _, ep := range []string{srv.URL, srv.URL + "/"} {
		cfg := s3Config(srv)
		cfg.Endpoint = ep
		if err := cfg.Validate(); err != nil {
			t.Errorf("endpoint %s: %v", ep, err)
		}
	}
}
