package scalebench

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/policy"
)

// The minimal client's uploads are the program's objects (mirror.Render),
// one PUT each, and the S3 proxy counts them as puts: the bench's mirror
// figures rest on both.
func TestMinimalUploader_OnePutPerPolicyOfTheRenderedObject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s3 := newS3Proxy(t, 0)
	up, err := newMinimalUploader(ctx, s3.URL(), 2)
	if err != nil {
		t.Fatal(err)
	}
	const now = "2026-11-26T12:00:00Z"
	want := map[string]string{} // key → ETag of the rendered object
	for i := range 5 {
		e := policy.Entry{PolicyName: fmt.Sprintf("규정-%d", i), Path: fmt.Sprintf("학칙/규정-%d.md", i), SHA: fmt.Sprintf("%040d", i), Title: fmt.Sprintf("규정 %d", i)}
		data := []byte(fmt.Sprintf("# 규정 %d\n\n본문 %d\n", i, i))
		o, err := mirror.Render(mirror.DefaultPrefix, mirror.Doc{PolicyName: e.PolicyName, Title: e.Title, SHA: e.SHA, Path: e.Path, LastUpdated: now, Content: data})
		if err != nil {
			t.Fatal(err)
		}
		want[o.Key] = mirror.ETagOf(o.Body)
		up.put(e, data, now)
	}
	if err := up.wait(); err != nil {
		t.Fatal(err)
	}
	kinds, _ := s3.take()
	if kinds["put"] != 5 || total(kinds) != 5 {
		t.Errorf("S3 requests %v, want 5 puts and nothing else", kinds)
	}
	listed, err := up.target.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, l := range listed {
		got[l.Key] = l.ETag
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("bucket holds %v, want the rendered objects %v", got, want)
	}
}

func TestS3Kind(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ method, target, want string }{
		{"PUT", "/policies-bench/policies/a/policy.md", "put"},
		{"POST", "/policies-bench?delete", "delete"},
		{"GET", "/policies-bench?list-type=2&prefix=policies/", "list"},
		{"GET", "/policies-bench/policies/a/policy.md", "get"},
		{"HEAD", "/policies-bench/policies/a/policy.md", "get"},
		{"PUT", "/policies-bench", "other"},
	} {
		if got := s3Kind(httptest.NewRequest(c.method, c.target, nil)); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.method, c.target, got, c.want)
		}
	}
}
