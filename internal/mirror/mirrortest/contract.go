package mirrortest

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/mirror"
)

// Harness is one target under test with a back door to its storage.
type Harness struct {
	Target mirror.Target
	Prefix string
	// PutRaw stores body at key bypassing the target: a hand edit, or a
	// foreign object (also outside the prefix).
	PutRaw func(t testing.TB, key string, body []byte)
	// ReadRaw reads key bypassing the target: its body and user metadata
	// (nil when the target keeps none); false when absent.
	ReadRaw func(t testing.TB, key string) (body []byte, meta map[string]string, ok bool)
	// Server is the S3 server behind the target, for the fault cases; nil
	// for a target that has none (they are skipped).
	Server *S3Server
	// MaxRetries is the target's bound of retries.
	MaxRetries int
	// Impatient is a second target on the same server whose tries time
	// out after ImpatientTimeout, for the slow-answer case (Target's own
	// try timeout stays generous, so a loaded machine is not a fault).
	Impatient        mirror.Target
	ImpatientTimeout time.Duration
	// Secrets must never appear in an error or a name.
	Secrets []string
}

// Run runs the contract suite; newHarness builds a fresh, empty target for
// each case.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	cases := []struct {
		name string
		run  func(t *testing.T, h Harness)
	}{
		{"PutListDelete_RoundTrip", testRoundTrip},
		{"ETag_IsMD5OfBody", testETag},
		{"Put_OverwritesWhole", testOverwrite},
		{"OutsidePrefix_NeverTouched", testOutsidePrefix},
		{"ForeignUnderPrefix_ListedAndDeleted", testForeignUnderPrefix},
		{"List_ManyObjects_AllPages", testManyObjects},
		{"Hangul_FrontMatterAndMetadata_RoundTrip", testHangul},
		{"Delete_PerKeyErrors_ReportedPerKey", testPerKeyErrors},
		{"ServerErrors_RetriedThenSucceed", testRetried},
		{"PersistentServerErrors_AreErrors", testPersistent},
		{"SlowAnswers_RetriedAfterTryTimeout", testSlow},
		{"Put_NoChecksumTrailer_PlainBody", testNoTrailer},
		{"Errors_HoldNoSecret", testNoSecrets},
		{"Stats_CountTheWork", testStats},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, newHarness(t)) })
	}
}

func doc(name, content string) mirror.Doc {
	sum := md5.Sum([]byte(name + content))
	return mirror.Doc{
		PolicyName: name, Title: name + " title", SHA: hex.EncodeToString(sum[:]) + "00000000",
		Path: "rules/" + name + ".md", LastUpdated: "2026-01-02T03:04:05Z", Content: []byte(content),
	}
}

func mustRender(t testing.TB, prefix string, d mirror.Doc) mirror.Object {
	t.Helper()
	o, err := mirror.Render(prefix, d)
	if err != nil {
		t.Fatalf("render %s: %v", d.PolicyName, err)
	}
	return o
}

func mustPut(t testing.TB, h Harness, d mirror.Doc) mirror.Object {
	t.Helper()
	o := mustRender(t, h.Prefix, d)
	etag, err := h.Target.Put(context.Background(), o)
	if err != nil {
		t.Fatalf("put %s: %v", o.Key, err)
	}
	if etag != mirror.ETagOf(o.Body) {
		t.Fatalf("put %s: etag %q, want %q", o.Key, etag, mirror.ETagOf(o.Body))
	}
	return o
}

func mustList(t testing.TB, h Harness) []mirror.Listed {
	t.Helper()
	l, err := h.Target.List(context.Background())
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	return l
}

func mustDelete(t testing.TB, h Harness, keys ...string) {
	t.Helper()
	perKey, err := h.Target.Delete(context.Background(), keys)
	if err != nil || len(perKey) != 0 {
		t.Fatalf("delete %v: %v, per key %v", keys, err, perKey)
	}
}

func listedOf(objs ...mirror.Object) []mirror.Listed {
	out := []mirror.Listed{}
	for _, o := range objs {
		out = append(out, mirror.Listed{Key: o.Key, ETag: mirror.ETagOf(o.Body), Size: int64(len(o.Body))})
	}
	return out
}

func diffListed(t testing.TB, want, got []mirror.Listed) {
	t.Helper()
	if got == nil {
		got = []mirror.Listed{}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("listing (-want +got):\n%s", d)
	}
}

func testRoundTrip(t *testing.T, h Harness) {
	diffListed(t, []mirror.Listed{}, mustList(t, h))
	a := mustPut(t, h, doc("a", "# A\n\nbody a\n"))
	b := mustPut(t, h, doc("b", "# B\r\n\r\nbody b"))
	c := mustPut(t, h, doc("c", "plain"))
	diffListed(t, listedOf(a, b, c), mustList(t, h))
	if body, _, ok := h.ReadRaw(t, b.Key); !ok || string(body) != string(b.Body) {
		t.Fatalf("stored body of %s = %q (present %v), want %q", b.Key, body, ok, b.Body)
	}
	mustDelete(t, h, a.Key, c.Key, h.Prefix+"never-there/policy.md")
	diffListed(t, listedOf(b), mustList(t, h))
	if _, _, ok := h.ReadRaw(t, a.Key); ok {
		t.Fatalf("%s still stored after delete", a.Key)
	}
}

func testETag(t *testing.T, h Harness) {
	o := mustRender(t, h.Prefix, doc("etag", "# E\n"))
	etag, err := h.Target.Put(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	sum := md5.Sum(o.Body)
	if want := hex.EncodeToString(sum[:]); etag != want || mirror.ETagOf(o.Body) != want {
		t.Fatalf("etag %q, ETagOf %q, want the body's md5 %q", etag, mirror.ETagOf(o.Body), want)
	}
	diffListed(t, listedOf(o), mustList(t, h))
}

func testOverwrite(t *testing.T, h Harness) {
	mustPut(t, h, doc("x", strings.Repeat("old and longer ", 100)))
	v2 := mustPut(t, h, doc("x", "new"))
	diffListed(t, listedOf(v2), mustList(t, h))
	if body, _, _ := h.ReadRaw(t, v2.Key); string(body) != string(v2.Body) {
		t.Fatalf("body after overwrite = %q, want %q", body, v2.Body)
	}
}

func testOutsidePrefix(t *testing.T, h Harness) {
	outside := []string{"other/x/policy.md", strings.TrimSuffix(h.Prefix, "/") + "-old/a/policy.md", "top.md"}
	for _, k := range outside {
		h.PutRaw(t, k, []byte("not ours"))
	}
	in := mustPut(t, h, doc("in", "ours"))
	diffListed(t, listedOf(in), mustList(t, h))
	ctx := context.Background()
	bad := append(outside, h.Prefix+"../other/x/policy.md", h.Prefix, h.Prefix+"a//policy.md")
	for _, k := range bad {
		if _, err := h.Target.Delete(ctx, []string{in.Key, k}); !errors.Is(err, mirror.ErrOutsidePrefix) {
			t.Errorf("delete %q: %v, want ErrOutsidePrefix", k, err)
		}
		if _, err := h.Target.Put(ctx, mirror.Object{Key: k, Body: []byte("x"), ContentType: mirror.ContentType}); !errors.Is(err, mirror.ErrOutsidePrefix) {
			t.Errorf("put %q: %v, want ErrOutsidePrefix", k, err)
		}
	}
	// A batch refused for one bad key is refused whole, before any request.
	diffListed(t, listedOf(in), mustList(t, h))
	mustDelete(t, h, in.Key)
	diffListed(t, []mirror.Listed{}, mustList(t, h))
	for _, k := range outside {
		if body, _, ok := h.ReadRaw(t, k); !ok || string(body) != "not ours" {
			t.Errorf("%s outside the prefix changed: %q (present %v)", k, body, ok)
		}
	}
}

func testForeignUnderPrefix(t *testing.T, h Harness) {
	keep := mustPut(t, h, doc("keep", "k"))
	stray := h.Prefix + "stray.txt"
	nested := h.Prefix + "gone/old/policy.md"
	h.PutRaw(t, stray, []byte("stray"))
	h.PutRaw(t, nested, []byte("gone"))
	r := mirror.Drift(h.Prefix, map[string]mirror.Want{"keep": {SHA: "s", UploadedSHA: "s", ETag: mirror.ETagOf(keep.Body)}}, mustList(t, h))
	if d := cmp.Diff(mirror.Repairs{Delete: []string{nested, stray}}, r); d != "" {
		t.Fatalf("drift (-want +got):\n%s", d)
	}
	mustDelete(t, h, r.Delete...)
	diffListed(t, listedOf(keep), mustList(t, h))
}

func testManyObjects(t *testing.T, h Harness) {
	var objs []mirror.Object
	for i := range 25 {
		objs = append(objs, mustPut(t, h, doc(fmt.Sprintf("p%02d", i), fmt.Sprint("body ", i))))
	}
	diffListed(t, listedOf(objs...), mustList(t, h))
	if h.Server != nil && h.Server.Count(OpList) < 3 {
		t.Fatalf("%d list requests for 25 objects, want pages (the harness lists 10 keys a page)", h.Server.Count(OpList))
	}
}

func testHangul(t *testing.T, h Harness) {
	d := mirror.Doc{
		PolicyName: "학칙 제1조(목적)", Title: "학칙: \"목적\" — 'yes' #1\n둘째 줄", SHA: strings.Repeat("ab", 20),
		Path: "규정/총칙/학칙 제1조(목적).md", LastUpdated: "2026-03-04T05:06:07Z", Content: []byte("# 학칙\n\n본문 ․ 끝\n"),
	}
	o := mustPut(t, h, d)
	body, meta, ok := h.ReadRaw(t, o.Key)
	if !ok {
		t.Fatalf("%s not stored", o.Key)
	}
	got, content, err := mirror.ParseFrontMatter(body)
	if err != nil {
		t.Fatal(err)
	}
	want := d
	want.Content = nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("front matter (-want +got):\n%s", diff)
	}
	if string(content) != string(d.Content) {
		t.Fatalf("content %q, want %q", content, d.Content)
	}
	if meta == nil {
		return // the folder keeps no metadata
	}
	decoded := map[string]string{}
	for k, v := range meta {
		for i := 0; i < len(v); i++ {
			if v[i] < ' ' || v[i] > '~' {
				t.Fatalf("metadata %s = %q is not printable ASCII", k, v)
			}
		}
		decoded[k] = mirror.DecodeHeader(v)
	}
	wantMeta := map[string]string{"sha": d.SHA, "policyname": d.PolicyName, "path": d.Path, "title": d.Title, "context": mirror.Context(d)}
	if diff := cmp.Diff(wantMeta, decoded); diff != "" {
		t.Fatalf("metadata (-want +got):\n%s", diff)
	}
}

func needServer(t *testing.T, h Harness) *S3Server {
	t.Helper()
	if h.Server == nil {
		t.Skip("the target has no server to inject faults into")
	}
	return h.Server
}

func testPerKeyErrors(t *testing.T, h Harness) {
	s := needServer(t, h)
	a, b, c := mustPut(t, h, doc("a", "a")), mustPut(t, h, doc("b", "b")), mustPut(t, h, doc("c", "c"))
	s.Faults.KeyError(b.Key, "AccessDenied")
	perKey, err := h.Target.Delete(context.Background(), []string{a.Key, b.Key, c.Key})
	if err != nil {
		t.Fatalf("delete: %v (a 200 answer with key errors is not a failed request)", err)
	}
	if len(perKey) != 1 || !errors.Is(perKey[b.Key], mirror.ErrAccessDenied) {
		t.Fatalf("per key = %v, want only %s: access denied", perKey, b.Key)
	}
	diffListed(t, listedOf(b), mustList(t, h))
}

func testRetried(t *testing.T, h Harness) {
	s := needServer(t, h)
	ctx := context.Background()
	s.Faults.FailNext(OpPut, 2, http.StatusServiceUnavailable)
	o := mustPut(t, h, doc("r", "retried"))
	s.Faults.FailNext(OpList, 1, http.StatusInternalServerError)
	diffListed(t, listedOf(o), mustList(t, h))
	s.Faults.FailNext(OpDelete, 1, http.StatusBadGateway)
	if perKey, err := h.Target.Delete(ctx, []string{o.Key}); err != nil || len(perKey) != 0 {
		t.Fatalf("delete after one 502: %v %v", err, perKey)
	}
	if got := []int{s.Count(OpPut), s.Count(OpList), s.Count(OpDelete)}; !cmp.Equal(got, []int{3, 2, 2}) {
		t.Fatalf("put, list, delete requests = %v, want [3 2 2]", got)
	}
	diffListed(t, []mirror.Listed{}, mustList(t, h))
}

func testPersistent(t *testing.T, h Harness) {
	s := needServer(t, h)
	ctx := context.Background()
	o := mustPut(t, h, doc("p", "persist"))
	tries := h.MaxRetries + 1
	s.Faults.FailNext(OpPut, tries, http.StatusInternalServerError)
	if _, err := h.Target.Put(ctx, o); !errors.Is(err, mirror.ErrUnavailable) {
		t.Fatalf("put through persistent 500s: %v, want ErrUnavailable", err)
	}
	if got := s.Count(OpPut); got != 1+tries {
		t.Fatalf("put requests = %d, want %d (1 + %d bounded tries)", got, 1+tries, tries)
	}
	s.Faults.FailNext(OpDelete, tries, http.StatusServiceUnavailable)
	perKey, err := h.Target.Delete(ctx, []string{o.Key})
	if !errors.Is(err, mirror.ErrUnavailable) || !errors.Is(perKey[o.Key], mirror.ErrUnavailable) {
		t.Fatalf("delete through persistent 503s: %v, per key %v; want ErrUnavailable for both", err, perKey)
	}
	s.Faults.FailNext(OpList, tries, http.StatusServiceUnavailable)
	if l, err := h.Target.List(ctx); !errors.Is(err, mirror.ErrUnavailable) || l != nil {
		t.Fatalf("list through persistent 503s: %v, %v; want ErrUnavailable and no listing", l, err)
	}
	diffListed(t, listedOf(o), mustList(t, h))
}

func testSlow(t *testing.T, h Harness) {
	s := needServer(t, h)
	slow := 50 * h.ImpatientTimeout
	s.Faults.SlowNext(OpPut, 1, slow)
	start := time.Now()
	o := mustRender(t, h.Prefix, doc("s", "slow"))
	if _, err := h.Impatient.Put(context.Background(), o); err != nil {
		t.Fatalf("put after one slow answer: %v", err)
	}
	if el := time.Since(start); el >= slow {
		t.Fatalf("put waited %v for a slow answer, want a retry after the %v try timeout", el, h.ImpatientTimeout)
	}
	// every list request is slow while the target tries (Go's transport may
	// resend a request on its own, which must not reach a fast answer)
	s.Faults.SlowNext(OpList, 100*(h.MaxRetries+1), slow)
	_, err := h.Impatient.List(context.Background())
	s.Faults.StopSlow(OpList)
	if !errors.Is(err, mirror.ErrUnavailable) {
		t.Fatalf("list through slow answers only: %v, want ErrUnavailable", err)
	}
	diffListed(t, listedOf(o), mustList(t, h))
}

func testNoTrailer(t *testing.T, h Harness) {
	s := needServer(t, h)
	o := mustPut(t, h, doc("plain", strings.Repeat("본문 body\n", 500)))
	mustDelete(t, h, o.Key)
	var puts, deletes int
	for _, r := range s.Requests() {
		switch r.Op {
		case OpPut:
			puts++
			if problems := ChecksumTrailerProblems(r); len(problems) > 0 {
				t.Errorf("PUT %s: %s", r.Path, strings.Join(problems, "; "))
			}
			if r.ContentLength != int64(len(o.Body)) || string(r.Body) != string(o.Body) {
				t.Errorf("PUT %s: Content-Length %d, body of %d bytes; want the plain body of %d", r.Path, r.ContentLength, len(r.Body), len(o.Body))
			}
		case OpDelete:
			deletes++
			if r.Header.Get("Content-MD5") == "" {
				t.Errorf("DeleteObjects without Content-MD5: %v", r.Header)
			}
		}
	}
	if puts != 1 || deletes != 1 {
		t.Fatalf("%d puts and %d deletes seen, want 1 and 1", puts, deletes)
	}
}

// ChecksumTrailerProblems lists what in a PUT shows the SDK's default
// flexible checksums: a trailer, a checksum header, aws-chunked encoding,
// a streaming payload signature, a body without a plain length.
func ChecksumTrailerProblems(r Request) []string {
	var p []string
	for name := range r.Header {
		l := strings.ToLower(name)
		if l == "x-amz-trailer" || strings.HasPrefix(l, "x-amz-checksum-") || l == "x-amz-sdk-checksum-algorithm" || l == "x-amz-decoded-content-length" {
			p = append(p, "header "+name+": "+r.Header.Get(name))
		}
	}
	if ce := r.Header.Get("Content-Encoding"); strings.Contains(ce, "aws-chunked") {
		p = append(p, "Content-Encoding "+ce)
	}
	if sha := r.Header.Get("X-Amz-Content-Sha256"); strings.HasPrefix(sha, "STREAMING-") {
		p = append(p, "X-Amz-Content-Sha256 "+sha)
	}
	if r.ContentLength < 0 {
		p = append(p, "no Content-Length")
	}
	return p
}

func testNoSecrets(t *testing.T, h Harness) {
	ctx := context.Background()
	var errs []error
	if s := h.Server; s != nil {
		s.Faults.FailNext(OpPut, h.MaxRetries+1, http.StatusForbidden)
		_, err := h.Target.Put(ctx, mustRender(t, h.Prefix, doc("x", "x")))
		if !errors.Is(err, mirror.ErrAccessDenied) {
			t.Fatalf("put answered 403: %v, want ErrAccessDenied", err)
		}
		errs = append(errs, err)
		s.Faults.FailNext(OpList, h.MaxRetries+1, http.StatusInternalServerError)
		_, err = h.Target.List(ctx)
		errs = append(errs, err)
	}
	_, err := h.Target.Delete(ctx, []string{"elsewhere/x"})
	errs = append(errs, err)
	for _, err := range errs {
		if err == nil {
			t.Fatal("want an error")
		}
		for _, sec := range h.Secrets {
			if sec != "" && (strings.Contains(err.Error(), sec) || strings.Contains(h.Target.Name(), sec)) {
				t.Fatalf("secret in %q / %q", err, h.Target.Name())
			}
		}
	}
}

func testStats(t *testing.T, h Harness) {
	a, b := mustPut(t, h, doc("a", "aaa")), mustPut(t, h, doc("b", "bb"))
	mustList(t, h)
	mustDelete(t, h, a.Key)
	want := mirror.Stats{Puts: 2, Deletes: 1, Lists: 1, BytesUploaded: int64(len(a.Body) + len(b.Body))}
	if d := cmp.Diff(want, h.Target.Stats()); d != "" {
		t.Fatalf("stats (-want +got):\n%s", d)
	}
	if s := h.Server; s != nil {
		s.Faults.FailNext(OpPut, 1, http.StatusServiceUnavailable)
		mustPut(t, h, doc("c", "c"))
		if got := h.Target.Stats().Puts; got != 4 {
			t.Fatalf("puts = %d after a retried put, want 4: every try is a request", got)
		}
	}
}
