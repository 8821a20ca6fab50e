package github_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/github"
	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
)

// contentFixture commits n policies (plus the odd names) and returns the
// commit, the files and their exact contents.
func contentFixture(t *testing.T, f *fixture, n int) (string, []policy.File, map[string]string) {
	t.Helper()
	writeOdd(f.repo)
	for i := range n {
		f.repo.Write(fmt.Sprintf("규정/제%02d 규정.md", i), fmt.Sprintf("# 규정 %d\r\n본문\r\n", i))
	}
	head := f.repo.Commit("contents")
	files := filesOf(t, f.repo, head)
	want := make(map[string]string)
	for _, file := range files {
		want[file.Path] = f.repo.ReadFile(head, file.Path)
	}
	return head, files, want
}

func asStrings(m map[string][]byte) map[string]string {
	s := make(map[string]string, len(m))
	for k, v := range m {
		s[k] = string(v)
	}
	return s
}

func TestContents_FewFiles_Blobs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head, files, all := contentFixture(t, f, 0)
	files = files[:3]
	want := make(map[string]string)
	for _, file := range files {
		want[file.Path] = all[file.Path]
	}
	src, progress := progressSource(t, f)

	got, failed, err := src.Contents(context.Background(), head, files)
	if err != nil || len(failed) != 0 {
		t.Fatalf("Contents: failed %v, err %v", failed, err)
	}
	if diff := cmp.Diff(want, asStrings(got)); diff != "" {
		t.Errorf("Contents (-want +got):\n%s", diff)
	}
	wantRequests(t, src, f.srv, 3)
	if n := f.srv.Requests()[githubtest.KindBlob]; n != 3 {
		t.Errorf("blob requests = %d, want 3", n)
	}
	if diff := cmp.Diff([][2]int{{1, 3}, {2, 3}, {3, 3}}, progress()); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
}

func TestContents_ManyFiles_OneTarball(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head, files, want := contentFixture(t, f, 20)
	src := f.source(t)

	got, failed, err := src.Contents(context.Background(), head, files)
	if err != nil || len(failed) != 0 {
		t.Fatalf("Contents: failed %v, err %v", failed, err)
	}
	if diff := cmp.Diff(want, asStrings(got)); diff != "" {
		t.Errorf("Contents (-want +got):\n%s", diff)
	}
	// Exact bytes (CRLF kept) for one file.
	if got := string(got["규정/제07 규정.md"]); got != "# 규정 7\r\n본문\r\n" {
		t.Errorf("규정/제07 규정.md = %q", got)
	}
	wantRequests(t, src, f.srv, 2)
	if c := f.srv.Requests(); c[githubtest.KindArchiveLink] != 1 || c[githubtest.KindArchive] != 1 {
		t.Errorf("requests = %v, want one archive link and one download", c)
	}
}

func TestContents_TarballKeepsNFDPaths(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	nfd := "\u1112\u1161\u11a8\u110e\u1175\u11a8.md" // 학칙 decomposed
	nfc := "학칙.md"
	f.repo.Write(nfd, "# decomposed\n")
	f.repo.Write(nfc, "# composed\n")
	f.repo.Write("폴더/\u1100\u1169\u11bc\u110c\u1175 (공지).md", "# 공지\n")
	head := f.repo.Commit("nfd")
	files := filesOf(t, f.repo, head)
	cfg := f.config()
	cfg.ArchiveThreshold = -1
	src := mustSource(t, cfg)

	got, failed, err := src.Contents(context.Background(), head, files)
	if err != nil || len(failed) != 0 {
		t.Fatalf("Contents: failed %v, err %v", failed, err)
	}
	want := map[string]string{
		nfd: "# decomposed\n",
		nfc: "# composed\n",
		"폴더/\u1100\u1169\u11bc\u110c\u1175 (공지).md": "# 공지\n",
	}
	if diff := cmp.Diff(want, asStrings(got)); diff != "" {
		t.Errorf("Contents (-want +got):\n%s", diff)
	}
	wantRequests(t, src, f.srv, 2)
}

func TestContents_PathMissingFromArchive_ReadFromBlob(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head, files, want := contentFixture(t, f, 12)
	// Not in the tree (so not in the tarball) but a real blob: read by sha.
	files = append(files, policy.File{Path: "없는 파일.md", SHA: files[0].SHA, Size: files[0].Size})
	want["없는 파일.md"] = want[files[0].Path]
	src := f.source(t)

	got, failed, err := src.Contents(context.Background(), head, files)
	if err != nil || len(failed) != 0 {
		t.Fatalf("Contents: failed %v, err %v", failed, err)
	}
	if diff := cmp.Diff(want, asStrings(got)); diff != "" {
		t.Errorf("Contents (-want +got):\n%s", diff)
	}
	wantRequests(t, src, f.srv, 3)
	if c := f.srv.Requests(); c[githubtest.KindArchiveLink] != 1 || c[githubtest.KindArchive] != 1 || c[githubtest.KindBlob] != 1 {
		t.Errorf("requests = %v, want archive link, download and one blob", c)
	}
}

func TestContents_PathMissingFromArchiveUnknownBlob_PerFileNotFound(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head, files, _ := contentFixture(t, f, 12)
	files = append(files, policy.File{Path: "없는 파일.md", SHA: "0123456789abcdef0123456789abcdef01234567", Size: 1})
	src := f.source(t)

	got, failed, err := src.Contents(context.Background(), head, files)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(files)-1 {
		t.Errorf("read %d files, want %d", len(got), len(files)-1)
	}
	if len(failed) != 1 || !errors.Is(failed["없는 파일.md"], policy.ErrNotFound) {
		t.Errorf("failed = %v, want 없는 파일.md not found", failed)
	}
	wantRequests(t, src, f.srv, 3)
}

func TestContents_ArchiveDownFallsBackToBlobs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head, files, want := contentFixture(t, f, 0)
	f.srv.FailNext(githubtest.KindArchive, -1, githubtest.ServerError(http.StatusBadGateway))
	src := f.source(t)

	got, failed, err := src.Contents(context.Background(), head, files)
	if err != nil || len(failed) != 0 {
		t.Fatalf("Contents: failed %v, err %v", failed, err)
	}
	if diff := cmp.Diff(want, asStrings(got)); diff != "" {
		t.Errorf("Contents (-want +got):\n%s", diff)
	}
	c := f.srv.Requests()
	if c[githubtest.KindArchive] != 4 || c[githubtest.KindBlob] != len(files) {
		t.Errorf("requests = %v, want 4 download tries then %d blobs", c, len(files))
	}
	if diff := cmp.Diff([]time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, f.sleeps.got()); diff != "" {
		t.Errorf("sleeps (-want +got):\n%s", diff)
	}
}

func TestContents_UnknownBlob_PerFileNotFound(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head, files, _ := contentFixture(t, f, 0)
	files = append(files[:2], policy.File{Path: "ghost.md", SHA: "0123456789abcdef0123456789abcdef01234567", Size: 1})
	src := f.source(t)

	got, failed, err := src.Contents(context.Background(), head, files)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(failed) != 1 || !errors.Is(failed["ghost.md"], policy.ErrNotFound) {
		t.Errorf("got %d, failed %v; want 2 read and ghost.md not found", len(got), failed)
	}
	wantRequests(t, src, f.srv, 3)
}

func TestContents_RateLimited_WholeRunError(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{githubtest.KindBlob, githubtest.KindArchiveLink, githubtest.KindArchive} {
		t.Run(kind, func(t *testing.T) {
			f := newFixture(t)
			head, files, _ := contentFixture(t, f, 0)
			if kind == githubtest.KindBlob {
				files = files[:3]
			}
			f.srv.FailNext(kind, -1, githubtest.SecondaryRateLimit(http.StatusTooManyRequests, time.Minute))
			_, _, err := f.source(t).Contents(context.Background(), head, files)
			var rl *policy.RateLimitError
			if !errors.Is(err, policy.ErrRateLimited) || !errors.As(err, &rl) || rl.Kind != "secondary" {
				t.Fatalf("Contents = %v, want a secondary rate limit", err)
			}
			if !rl.RetryAt.Equal(testNow.Add(time.Minute)) {
				t.Errorf("RetryAt = %v, want %v", rl.RetryAt, testNow.Add(time.Minute))
			}
		})
	}
}

func TestContents_Empty_NoRequest(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Commit("empty")
	src := f.source(t)
	got, failed, err := src.Contents(context.Background(), "main", nil)
	if err != nil || len(got) != 0 || len(failed) != 0 {
		t.Fatalf("Contents(nil) = %v, %v, %v", got, failed, err)
	}
	wantRequests(t, src, f.srv, 0)
}

// progressSource is a Source on f whose Progress calls are recorded; progress
// returns them (done, total) in order.
func progressSource(t *testing.T, f *fixture) (src *github.Source, progress func() [][2]int) {
	t.Helper()
	var (
		mu    sync.Mutex
		calls [][2]int
	)
	cfg := f.config()
	cfg.Progress = func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, [2]int{done, total})
	}
	return mustSource(t, cfg), func() [][2]int {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(calls)
	}
}
