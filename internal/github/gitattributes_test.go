package github_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
)

// tarball downloads the commit's tarball from the fake the way a client
// does (archive link, redirect followed) and returns path → content of its
// regular files.
func tarball(t *testing.T, srv *githubtest.Server, commit string) map[string]string {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL() + "repos/" + owner + "/" + name + "/tarball/" + commit)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("tarball: status %d", resp.StatusCode)
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	entries := make(map[string]string)
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return entries
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		_, p, _ := strings.Cut(h.Name, "/")
		entries[p] = string(data)
	}
}

// exportFixture commits a .gitattributes that leaves ignored.md out of the
// tarball and rewrites subst.md in it, plus n policies; it returns the
// commit, the files and their exact blob contents.
func exportFixture(t *testing.T, f *fixture, n int) (string, []policy.File, map[string]string) {
	t.Helper()
	f.repo.Write(".gitattributes", "ignored.md export-ignore\nsubst.md export-subst\n")
	f.repo.Write("ignored.md", "# 내보내지 않음\r\n본문\r\n")
	f.repo.Write("subst.md", "# 치환\n커밋 $Format:%H$ 기준\n")
	for i := range n {
		f.repo.Write(fmt.Sprintf("규정/제%02d 규정.md", i), fmt.Sprintf("# 규정 %d\n본문\n", i))
	}
	head := f.repo.Commit("gitattributes")
	files := filesOf(t, f.repo, head)
	want := make(map[string]string)
	for _, file := range files {
		want[file.Path] = f.repo.ReadFile(head, file.Path)
	}
	return head, files, want
}

func TestContents_ExportIgnoreAndSubst_ExactBlobContent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head, files, want := exportFixture(t, f, 12)
	if len(files) <= 10 {
		t.Fatalf("%d files: the test needs more than the archive threshold", len(files))
	}

	// The fake's git archive honours the committed .gitattributes, as GitHub's does.
	archived := tarball(t, f.srv, head)
	if _, ok := archived["ignored.md"]; ok {
		t.Fatal("fake tarball holds ignored.md despite export-ignore")
	}
	if got, wantSubst := archived["subst.md"], "# 치환\n커밋 "+head+" 기준\n"; got != wantSubst {
		t.Fatalf("fake tarball subst.md = %q, want %q (export-subst)", got, wantSubst)
	}
	if archived["규정/제03 규정.md"] != want["규정/제03 규정.md"] {
		t.Fatal("fake tarball alters an ordinary file")
	}
	f.srv.ResetRequests()

	src, progress := progressSource(t, f)

	got, failed, err := src.Contents(context.Background(), head, files)
	if err != nil || len(failed) != 0 {
		t.Fatalf("Contents: failed %v, err %v", failed, err)
	}
	if diff := cmp.Diff(want, asStrings(got)); diff != "" {
		t.Errorf("Contents (-want +got):\n%s", diff)
	}
	if got := string(got["subst.md"]); got != "# 치환\n커밋 $Format:%H$ 기준\n" {
		t.Errorf("subst.md = %q, want the blob, placeholder unexpanded", got)
	}
	if got := string(got["ignored.md"]); got != "# 내보내지 않음\r\n본문\r\n" {
		t.Errorf("ignored.md = %q, want the blob", got)
	}

	wantRequests(t, src, f.srv, 4)
	c := f.srv.Requests()
	if c[githubtest.KindArchiveLink] != 1 || c[githubtest.KindArchive] != 1 || c[githubtest.KindBlob] != 2 {
		t.Errorf("requests = %v, want archive link, download and 2 blobs", c)
	}
	var blobs []string
	for _, r := range f.srv.Log() {
		if r.Kind == githubtest.KindBlob {
			blobs = append(blobs, r.Path[strings.LastIndex(r.Path, "/")+1:])
		}
	}
	slices.Sort(blobs)
	wantBlobs := []string{f.repo.BlobSHA(head, "ignored.md"), f.repo.BlobSHA(head, "subst.md")}
	slices.Sort(wantBlobs)
	if diff := cmp.Diff(wantBlobs, blobs); diff != "" {
		t.Errorf("blob requests (-want +got):\n%s", diff)
	}

	// Each file counted once: 1..n of n.
	var wantCalls [][2]int
	for i := range files {
		wantCalls = append(wantCalls, [2]int{i + 1, len(files)})
	}
	if diff := cmp.Diff(wantCalls, progress()); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
}

func TestContents_ArchiveEOLConversion_ReadFromBlob(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Write(".gitattributes", "crlf.md text eol=crlf\n")
	f.repo.Write("crlf.md", "# 줄바꿈\n본문\n")
	head, files, want := contentFixture(t, f, 12)
	if archived := tarball(t, f.srv, head)["crlf.md"]; archived != "# 줄바꿈\r\n본문\r\n" {
		t.Fatalf("fake tarball crlf.md = %q, want CRLF (eol=crlf)", archived)
	}
	f.srv.ResetRequests()
	src := f.source(t)

	got, failed, err := src.Contents(context.Background(), head, files)
	if err != nil || len(failed) != 0 {
		t.Fatalf("Contents: failed %v, err %v", failed, err)
	}
	if diff := cmp.Diff(want, asStrings(got)); diff != "" {
		t.Errorf("Contents (-want +got):\n%s", diff)
	}
	if got := string(got["crlf.md"]); got != "# 줄바꿈\n본문\n" {
		t.Errorf("crlf.md = %q, want the blob (LF)", got)
	}
	wantRequests(t, src, f.srv, 3)
}

func TestContents_ExportedFiles_BlobNotFoundPerFile(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head, files, want := exportFixture(t, f, 12)
	f.srv.FailNext(githubtest.KindBlob, 1, githubtest.StatusError(http.StatusNotFound, "Not Found"))
	src := f.source(t)

	got, failed, err := src.Contents(context.Background(), head, files)
	if err != nil {
		t.Fatal(err)
	}
	if len(failed) != 1 {
		t.Fatalf("failed = %v, want one of ignored.md, subst.md", failed)
	}
	for p, err := range failed {
		if p != "ignored.md" && p != "subst.md" {
			t.Errorf("failed %s, want one of ignored.md, subst.md", p)
		}
		if !errors.Is(err, policy.ErrNotFound) {
			t.Errorf("failed[%s] = %v, want ErrNotFound", p, err)
		}
		delete(want, p)
	}
	if diff := cmp.Diff(want, asStrings(got)); diff != "" {
		t.Errorf("Contents (-want +got):\n%s", diff)
	}
	wantRequests(t, src, f.srv, 4)
}

func TestContents_ExportedFiles_BlobRateLimited_WholeRunError(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head, files, _ := exportFixture(t, f, 12)
	f.srv.FailNext(githubtest.KindBlob, -1, githubtest.SecondaryRateLimit(http.StatusTooManyRequests, time.Minute))

	got, failed, err := f.source(t).Contents(context.Background(), head, files)
	var rl *policy.RateLimitError
	if !errors.Is(err, policy.ErrRateLimited) || !errors.As(err, &rl) || rl.Kind != "secondary" {
		t.Fatalf("Contents = %v, want a secondary rate limit", err)
	}
	if _, ok := failed["subst.md"]; ok {
		t.Errorf("a rate limit is a run error, not a per-file one: %v", failed)
	}
	if len(got) != len(files)-2 {
		t.Errorf("read %d files, want the %d the tarball delivered", len(got), len(files)-2)
	}
	if _, ok := got["subst.md"]; ok {
		t.Error("subst.md kept with its tarball bytes")
	}
}
