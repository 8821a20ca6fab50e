package mirror_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sync/errgroup"

	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/mirror/mirrortest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/retry"
)

func mustS3(t testing.TB, cfg mirror.Config) *mirror.S3 {
	t.Helper()
	s, err := mirror.NewS3(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func hangulDoc() mirror.Doc {
	return mirror.Doc{PolicyName: "학칙 제2조", Title: "학칙: 정의 \"용어\"", SHA: strings.Repeat("c", 40),
		Path: "규정/학칙 제2조.md", LastUpdated: "2026-02-02T00:00:00Z", Content: []byte("# 학칙\n")}
}

// The control of Put_NoChecksumTrailer_PlainBody: with the SDK's default
// checksum settings the same upload carries what R2 mishandles, so the
// contract case would catch a target that lost the setting.
func TestS3_SDKDefaultChecksums_WouldSendTrailer(t *testing.T) {
	t.Parallel()
	srv := mirrortest.NewS3Server(t)
	s, err := mirror.NewS3WithSDKChecksums(context.Background(), s3Config(srv))
	if err != nil {
		t.Fatal(err)
	}
	o, _ := mirror.Render(mirror.DefaultPrefix, hangulDoc())
	if _, err := s.Put(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	puts := 0
	for _, r := range srv.Requests() {
		if r.Op != mirrortest.OpPut {
			continue
		}
		puts++
		problems := mirrortest.ChecksumTrailerProblems(r)
		if len(problems) == 0 {
			t.Fatalf("the SDK's defaults sent a plain PUT (%v): the trailer check proves nothing", r.Header)
		}
		t.Logf("a naive PUT: %v", problems)
	}
	if puts != 1 {
		t.Fatalf("%d puts", puts)
	}
}

// Hangul metadata survives encode → the S3 server → a reader's SDK → decode.
func TestS3_HangulMetadata_RoundTripThroughSDK(t *testing.T) {
	t.Parallel()
	srv := mirrortest.NewS3Server(t)
	cfg := s3Config(srv)
	d := hangulDoc()
	o, _ := mirror.Render(mirror.DefaultPrefix, d)
	if _, err := mustS3(t, cfg).Put(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	reader := s3.New(s3.Options{
		Region: "auto", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true, HTTPClient: srv.Client,
		Credentials: credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, ""),
	})
	out, err := reader.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(mirrortest.Bucket), Key: aws.String(o.Key)})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for k, v := range out.Metadata {
		got[k] = mirror.DecodeHeader(v)
	}
	want := map[string]string{"sha": d.SHA, "policyname": d.PolicyName, "path": d.Path, "title": d.Title, "context": mirror.Context(d)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("metadata (-want +got):\n%s", diff)
	}
	if ct := aws.ToString(out.ContentType); ct != mirror.ContentType {
		t.Fatalf("content type %q", ct)
	}
}

func TestS3_Delete_BatchesOfAtMost1000Keys(t *testing.T) {
	t.Parallel()
	srv := mirrortest.NewS3Server(t)
	var keys []string
	for i := range 2500 {
		k := mirror.Key(mirror.DefaultPrefix, fmt.Sprint("p", i))
		srv.PutRaw(t, k, []byte("x"))
		keys = append(keys, k)
	}
	s := mustS3(t, s3Config(srv))
	perKey, err := s.Delete(context.Background(), keys)
	if err != nil || len(perKey) != 0 {
		t.Fatalf("delete: %v; %d keys not deleted", err, len(perKey))
	}
	var sizes []int
	for _, r := range srv.Requests() {
		if r.Op == mirrortest.OpDelete {
			var in struct {
				Objects []struct{ Key string } `xml:"Object"`
			}
			if err := xml.Unmarshal(r.Body, &in); err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, len(in.Objects))
		}
	}
	if !cmp.Equal(sizes, []int{1000, 1000, 500}) {
		t.Fatalf("batches of %v keys, want [1000 1000 500]", sizes)
	}
	if l, err := s.List(context.Background()); err != nil || len(l) != 0 {
		t.Fatalf("left %d objects, %v", len(l), err)
	}
}

func TestS3_MissingBucket_IsConfigError(t *testing.T) {
	t.Parallel()
	srv := mirrortest.NewS3Server(t)
	cfg := s3Config(srv)
	cfg.Bucket = "no-such-bucket"
	s := mustS3(t, cfg)
	o, _ := mirror.Render(mirror.DefaultPrefix, hangulDoc())
	_, err := s.Put(context.Background(), o)
	if !errors.Is(err, mirror.ErrNotFound) || !errors.Is(err, policy.ErrConfig) {
		t.Fatalf("put into a missing bucket: %v, want ErrNotFound and ErrConfig", err)
	}
	if _, err := s.List(context.Background()); !errors.Is(err, mirror.ErrNotFound) {
		t.Fatalf("list of a missing bucket: %v, want ErrNotFound", err)
	}
}

// A configuration error of the store stops the run (exit 2): it names the
// setting to fix, never the secret.
func TestS3_RefusedKeysOrMissingBucket_NameTheSetting(t *testing.T) {
	t.Parallel()
	srv := mirrortest.NewS3Server(t)
	o, _ := mirror.Render(mirror.DefaultPrefix, hangulDoc())
	missing := s3Config(srv)
	missing.Bucket = "no-such-bucket"
	if _, err := mustS3(t, missing).Put(context.Background(), o); !strings.Contains(fmt.Sprint(err), "CONTENT_BUCKET") {
		t.Errorf("put into a missing bucket: %v; want CONTENT_BUCKET named", err)
	}
	srv.Faults.FailNext(mirrortest.OpPut, 10, http.StatusForbidden) // every try
	_, err := mustS3(t, s3Config(srv)).Put(context.Background(), o)
	if !errors.Is(err, policy.ErrConfig) || !strings.Contains(fmt.Sprint(err), "CONTENT_ACCESS_KEY_ID") || strings.Contains(fmt.Sprint(err), mirrortest.SecretAccessKey) {
		t.Errorf("put refused 403: %v; want a configuration error naming CONTENT_ACCESS_KEY_ID, without the secret", err)
	}
}

func TestS3_CanceledContext_IsNotUnavailable(t *testing.T) {
	t.Parallel()
	srv := mirrortest.NewS3Server(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o, _ := mirror.Render(mirror.DefaultPrefix, hangulDoc())
	_, err := mustS3(t, s3Config(srv)).Put(ctx, o)
	if !errors.Is(err, context.Canceled) || errors.Is(err, mirror.ErrUnavailable) {
		t.Fatalf("put with a canceled context: %v", err)
	}
}

// With a seeded share of 503s on every request, bounded retries still
// mirror everything, and the listing is exact.
func TestS3_SeededServerErrors_Converge(t *testing.T) {
	t.Parallel()
	srv := mirrortest.NewS3Server(t)
	cfg := s3Config(srv)
	cfg.MaxRetries = 6
	s := mustS3(t, mirror.WithPageSize(cfg, 7))
	srv.Faults.Random(18, 0.25)
	var want []mirror.Listed
	for i := range 40 {
		o, _ := mirror.Render(mirror.DefaultPrefix, mirror.Doc{PolicyName: fmt.Sprintf("p%02d", i), Content: []byte(fmt.Sprint(i))})
		etag, err := s.Put(context.Background(), o)
		if err != nil {
			t.Fatalf("put %s: %v", o.Key, err)
		}
		want = append(want, mirror.Listed{Key: o.Key, ETag: etag, Size: int64(len(o.Body))})
	}
	got, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("listing (-want +got):\n%s", d)
	}
	if srv.Count(mirrortest.OpPut) <= 40 {
		t.Fatal("no fault was injected: the test proves nothing")
	}
}

// BenchmarkS3_Put1000_Concurrency16 measures 1,000 uploads of a 4 KiB
// policy to the in-process gofakes3 server over TLS, 16 at a time:
//
//	go test -run '^$' -bench Put1000 -benchtime 5x ./internal/mirror/
func BenchmarkS3_Put1000_Concurrency16(b *testing.B) {
	srv := mirrortest.NewS3Server(b)
	s := mustS3(b, s3Config(srv))
	content := []byte(strings.Repeat("규정 본문 line\n", 256))
	objs := make([]mirror.Object, 1000)
	for i := range objs {
		objs[i], _ = mirror.Render(mirror.DefaultPrefix, mirror.Doc{PolicyName: fmt.Sprint("정책 ", i), Title: "제목", Content: content})
	}
	b.ResetTimer()
	for range b.N {
		g, ctx := errgroup.WithContext(context.Background())
		g.SetLimit(16)
		for _, o := range objs {
			g.Go(func() error { _, err := s.Put(ctx, o); return err })
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMinimalClient_Put1000_Concurrency16 is the baseline of the one
// above: the same 1,000 bodies PUT to the same server by bare net/http,
// without the SDK, signing or retries.
func BenchmarkMinimalClient_Put1000_Concurrency16(b *testing.B) {
	srv := mirrortest.NewS3Server(b)
	content := []byte(strings.Repeat("규정 본문 line\n", 256))
	objs := make([]mirror.Object, 1000)
	for i := range objs {
		objs[i], _ = mirror.Render(mirror.DefaultPrefix, mirror.Doc{PolicyName: fmt.Sprint("정책 ", i), Title: "제목", Content: content})
	}
	b.ResetTimer()
	for range b.N {
		g, ctx := errgroup.WithContext(context.Background())
		g.SetLimit(16)
		for _, o := range objs {
			g.Go(func() error { return minimalPut(ctx, srv, o) })
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}

func minimalPut(ctx context.Context, srv *mirrortest.S3Server, o mirror.Object) error {
	u := srv.URL + "/" + mirrortest.Bucket + "/" + (&url.URL{Path: o.Key}).EscapedPath()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, bytes.NewReader(o.Body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", o.ContentType)
	for k, v := range o.Metadata {
		req.Header.Set("X-Amz-Meta-"+k, v)
	}
	resp, err := srv.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

func TestS3_Put_RawNonASCIIMetadata_RejectedBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	srv := mirrortest.NewS3Server(t)
	o, _ := mirror.Render(mirror.DefaultPrefix, hangulDoc())
	o.Metadata[mirror.MetaTitle] = "학칙" // not encoded
	if _, err := mustS3(t, s3Config(srv)).Put(context.Background(), o); !errors.Is(err, mirror.ErrRejected) {
		t.Fatalf("put: %v, want ErrRejected", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests made (a header Go refuses to send would be retried as unreachable)", n)
	}
}

// S3 refuses a request signed more than 15 minutes off its own clock with
// 403 RequestTimeTooSkewed. It is the machine's clock to set right: the
// error said the keys were refused, and an operator rotated good keys.
func TestS3_ClockSkewed_ConfigErrorNamingTheClockNotTheKeys(t *testing.T) {
	t.Parallel()
	srv := mirrortest.NewS3Server(t)
	srv.Faults.FailNextWith(mirrortest.OpPut, 1, http.StatusForbidden, "RequestTimeTooSkewed")
	o, _ := mirror.Render(mirror.DefaultPrefix, hangulDoc())
	_, err := mustS3(t, s3Config(srv)).Put(context.Background(), o)
	if !errors.Is(err, policy.ErrConfig) || !strings.Contains(fmt.Sprint(err), "clock") {
		t.Fatalf("put refused for a skewed clock: %v; want a configuration error naming the clock", err)
	}
	if strings.Contains(fmt.Sprint(err), "CONTENT_ACCESS_KEY_ID") {
		t.Errorf("put refused for a skewed clock: %v; the keys are not at fault", err)
	}
}

// An upload whose owed retry would end after the run's deadline fails with
// *retry.PastDeadline kept, so that the run has it wait, counting no failed
// try: translate dropped it, and a cut upload counted against the policy
// (a reviewer, of a55cf7d).
func TestS3_RetryPastTheDeadline_PastDeadlineKept(t *testing.T) {
	t.Parallel()
	srv := mirrortest.NewS3Server(t)
	cfg := s3Config(srv) // its waits take no time: the backoff grows, try after try, past what is left
	cfg.MaxRetries = 20
	s := mustS3(t, cfg)
	srv.Faults.FailNext(mirrortest.OpPut, 100, 503)
	o, err := mirror.Render(mirror.DefaultPrefix, mirror.Doc{PolicyName: "p", Content: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(3*time.Second))
	defer cancel()
	_, err = s.Put(ctx, o)
	if cut := (*retry.PastDeadline)(nil); !errors.As(err, &cut) || !errors.Is(err, mirror.ErrUnavailable) {
		t.Fatalf("put cut by the deadline: %v, want a *retry.PastDeadline over the store's unavailability", err)
	}
}
