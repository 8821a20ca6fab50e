package githubtest_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-github/v66/github"

	"github.com/knue/syncjob/internal/github/githubtest"
)

func mustClient(t *testing.T, s *githubtest.Server) *github.Client {
	t.Helper()
	c := github.NewClient(nil)
	u, err := url.Parse(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	c.BaseURL = u
	return c
}

func TestServer_CommitSHAAndTree(t *testing.T) {
	t.Parallel()
	repo := githubtest.NewRepo(t)
	repo.Write("규정/학칙 (2024).md", "# 학칙\n")
	repo.Write("a/b/c.md", "c")
	repo.Symlink("link.md", "a/b/c.md")
	first := repo.Commit("first")
	repo.Submodule("vendor/sub", first)
	head := repo.Commit("second")
	s := githubtest.NewServer(t, "knue", "policies", repo)
	c := mustClient(t, s)
	ctx := context.Background()

	got, _, err := c.Repositories.GetCommitSHA1(ctx, "knue", "policies", "main", "")
	if err != nil || got != head {
		t.Fatalf("GetCommitSHA1 = %q, %v; want %q", got, err, head)
	}
	_, _, err = c.Repositories.GetCommitSHA1(ctx, "knue", "policies", "nope", "")
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("unknown ref: err = %v, want 422", err)
	}
	_, _, err = c.Repositories.GetCommitSHA1(ctx, "knue", "other", "main", "")
	if !errors.As(err, &er) || er.Response.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown repo: err = %v, want 404", err)
	}

	tree, _, err := c.Git.GetTree(ctx, "knue", "policies", head, true)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, e := range tree.Entries {
		kinds[e.GetPath()] = e.GetMode() + " " + e.GetType()
	}
	want := map[string]string{
		"a":               "040000 tree",
		"a/b":             "040000 tree",
		"a/b/c.md":        "100644 blob",
		"link.md":         "120000 blob",
		"vendor":          "040000 tree",
		"vendor/sub":      "160000 commit",
		"규정":              "040000 tree",
		"규정/학칙 (2024).md": "100644 blob",
	}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
	if tree.GetTruncated() {
		t.Error("tree truncated")
	}
	s.TruncateTreesOver = 3
	tree, _, err = c.Git.GetTree(ctx, "knue", "policies", head, true)
	if err != nil || !tree.GetTruncated() || len(tree.Entries) != 3 {
		t.Fatalf("truncated tree: %v entries, truncated %v, err %v", len(tree.Entries), tree.GetTruncated(), err)
	}
	if got := s.Requests(); got[githubtest.KindCommitSHA] != 3 || got[githubtest.KindTree] != 2 || got.Total() != 5 {
		t.Errorf("Requests() = %v", got)
	}
}

func TestServer_CompareRenameAndDiverged(t *testing.T) {
	t.Parallel()
	repo := githubtest.NewRepo(t)
	repo.Write("old/a.md", "same content\n")
	repo.Write("b.md", "b\n")
	base := repo.Commit("base")
	repo.Move("old/a.md", "new/a 2.md")
	repo.Remove("b.md")
	repo.Write("c.md", "c\n")
	head := repo.Commit("head")
	s := githubtest.NewServer(t, "o", "r", repo)
	c := mustClient(t, s)
	ctx := context.Background()

	cmpr, _, err := c.Repositories.CompareCommits(ctx, "o", "r", base, head, nil)
	if err != nil {
		t.Fatal(err)
	}
	type file struct{ Status, Name, Prev, SHA string }
	var got []file
	for _, f := range cmpr.Files {
		got = append(got, file{f.GetStatus(), f.GetFilename(), f.GetPreviousFilename(), f.GetSHA()})
	}
	sort.Slice(got, func(i, j int) bool { return got[i].Name < got[j].Name })
	want := []file{
		{"removed", "b.md", "", repo.BlobSHA(base, "b.md")},
		{"added", "c.md", "", repo.BlobSHA(head, "c.md")},
		{"renamed", "new/a 2.md", "old/a.md", repo.BlobSHA(head, "new/a 2.md")},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if cmpr.GetStatus() != "ahead" || cmpr.GetAheadBy() != 1 || cmpr.GetTotalCommits() != 1 {
		t.Errorf("status %s ahead %d", cmpr.GetStatus(), cmpr.GetAheadBy())
	}

	repo.Reset(base)
	forced := repo.Commit("rewritten")
	cmpr, _, err = c.Repositories.CompareCommits(ctx, "o", "r", head, forced, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cmpr.GetStatus() != "diverged" || cmpr.GetMergeBaseCommit().GetSHA() != base {
		t.Errorf("status %s merge base %s, want diverged %s", cmpr.GetStatus(), cmpr.GetMergeBaseCommit().GetSHA(), base)
	}
	_, _, err = c.Repositories.CompareCommits(ctx, "o", "r", "0123456789012345678901234567890123456789", forced, nil)
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown base: err = %v, want 404", err)
	}
}

func TestServer_BlobAndArchive(t *testing.T) {
	t.Parallel()
	repo := githubtest.NewRepo(t)
	nfd := "\u1112\u1161\u11a8\u110e\u1175\u11a8.md" // 학칙 in NFD
	repo.Write(nfd, "# nfd\n")
	repo.Write("x/y.md", "y")
	head := repo.Commit("c")
	s := githubtest.NewServer(t, "o", "r", repo)
	c := mustClient(t, s)
	ctx := context.Background()

	raw, _, err := c.Git.GetBlobRaw(ctx, "o", "r", repo.BlobSHA(head, nfd))
	if err != nil || string(raw) != "# nfd\n" {
		t.Fatalf("GetBlobRaw = %q, %v", raw, err)
	}
	blob, _, err := c.Git.GetBlob(ctx, "o", "r", repo.BlobSHA(head, "x/y.md"))
	if err != nil || blob.GetEncoding() != "base64" || blob.GetSize() != 1 {
		t.Fatalf("GetBlob = %v, %v", blob, err)
	}
	link, _, err := c.Repositories.GetArchiveLink(ctx, "o", "r", github.Tarball, &github.RepositoryContentGetOptions{Ref: head}, 0)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(link.String())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	paths, err := githubtest.ArchiveEntries(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(paths)
	if diff := cmp.Diff([]string{"x/y.md", nfd}, paths); diff != "" {
		t.Errorf("archive (-want +got):\n%s", diff)
	}
	if got := s.Requests(); got[githubtest.KindArchiveLink] != 1 || got[githubtest.KindArchive] != 1 {
		t.Errorf("Requests() = %v", got)
	}
}

func TestServer_Faults(t *testing.T) {
	t.Parallel()
	repo := githubtest.NewRepo(t)
	repo.Commit("empty")
	s := githubtest.NewServer(t, "o", "r", repo)
	c := mustClient(t, s)
	ctx := context.Background()

	reset := time.Now().Add(time.Hour).Truncate(time.Second)
	s.FailNext(githubtest.KindCommitSHA, 1, githubtest.PrimaryRateLimit(http.StatusForbidden, reset))
	_, _, err := c.Repositories.GetCommitSHA1(ctx, "o", "r", "main", "")
	var rl *github.RateLimitError
	if !errors.As(err, &rl) || !rl.Rate.Reset.Time.Equal(reset) {
		t.Fatalf("primary: err = %v", err)
	}

	c = mustClient(t, s)
	s.FailNext(githubtest.AnyKind, 1, githubtest.SecondaryRateLimit(http.StatusForbidden, time.Minute))
	_, _, err = c.Repositories.GetCommitSHA1(ctx, "o", "r", "main", "")
	var abuse *github.AbuseRateLimitError
	if !errors.As(err, &abuse) || abuse.GetRetryAfter() != time.Minute {
		t.Fatalf("secondary: err = %v", err)
	}

	c = mustClient(t, s)
	s.FailNext(githubtest.AnyKind, 1, githubtest.ServerError(http.StatusBadGateway))
	_, _, err = c.Repositories.GetCommitSHA1(ctx, "o", "r", "main", "")
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response.StatusCode != http.StatusBadGateway {
		t.Fatalf("502: err = %v", err)
	}

	s.FailNext(githubtest.AnyKind, 1, githubtest.Hang())
	hc := &http.Client{Timeout: 50 * time.Millisecond}
	resp, err := hc.Get(s.URL() + "repos/o/r/commits/main")
	if err == nil {
		resp.Body.Close()
		t.Fatal("hang: want a timeout")
	}

	s.FailRandom(githubtest.KindTree, 7, 0.5, githubtest.ServerError(http.StatusBadGateway))
	pattern := func() []int {
		var st []int
		for range 8 {
			resp, err := http.Get(s.URL() + "repos/o/r/git/trees/main")
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			st = append(st, resp.StatusCode)
		}
		return st
	}
	first := pattern()
	s.ClearFaults()
	s.FailRandom(githubtest.KindTree, 7, 0.5, githubtest.ServerError(http.StatusBadGateway))
	if diff := cmp.Diff(first, pattern()); diff != "" {
		t.Errorf("seeded faults not deterministic (-first +second):\n%s", diff)
	}
}

func TestServer_Token(t *testing.T) {
	t.Parallel()
	repo := githubtest.NewRepo(t)
	repo.Commit("empty")
	s := githubtest.NewServer(t, "o", "r", repo)
	s.Token = "s3cret"
	ctx := context.Background()

	_, _, err := mustClient(t, s).WithAuthToken("wrong").Repositories.GetCommitSHA1(ctx, "o", "r", "main", "")
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: err = %v, want 401", err)
	}
	if _, _, err := mustClient(t, s).WithAuthToken("s3cret").Repositories.GetCommitSHA1(ctx, "o", "r", "main", ""); err != nil {
		t.Fatalf("right token: %v", err)
	}
	log := s.Log()
	if len(log) != 2 || log[1].Status != http.StatusOK || log[0].Status != http.StatusUnauthorized {
		t.Errorf("log = %+v", log)
	}
}

func TestServer_LargeBlobAndArchive_Streamed(t *testing.T) {
	t.Parallel()
	repo := githubtest.NewRepo(t)
	const size = 64 << 20
	repo.WriteFrom("big.md", githubtest.Fill('a', size))
	repo.Write("small.md", "# small\n")
	head := repo.Commit("big")
	s := githubtest.NewServer(t, "o", "r", repo)
	s.ArchiveExtra = []githubtest.Generated{{Path: "bomb.bin", Size: 1 << 30}}
	c := mustClient(t, s)
	ctx := context.Background()

	// A raw blob carries its exact length; a client that stops reading
	// stops the server, give or take the socket's buffers.
	req, _ := c.NewRequest("GET", "repos/o/r/git/blobs/"+repo.BlobSHA(head, "big.md"), nil)
	req.Header.Set("Accept", "application/vnd.github.v3.raw")
	resp, err := c.BareDo(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ContentLength != size {
		t.Errorf("Content-Length = %d, want %d", resp.ContentLength, size)
	}
	if _, err := io.CopyN(io.Discard, resp.Body, 1<<20); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	// The tarball starts with the generated entry, then the repository's.
	link, _, err := c.Repositories.GetArchiveLink(ctx, "o", "r", github.Tarball, &github.RepositoryContentGetOptions{Ref: head}, 0)
	if err != nil {
		t.Fatal(err)
	}
	aresp, err := http.Get(link.String())
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(aresp.Body)
	if err != nil {
		t.Fatal(err)
	}
	h, err := tar.NewReader(zr).Next()
	if err != nil || h.Name != "o-r-"+head[:7]+"/bomb.bin" || h.Size != 1<<30 {
		t.Fatalf("first entry = %+v, %v; want the generated bomb.bin of 1 GiB", h, err)
	}
	aresp.Body.Close()

	// Wait for both handlers to record what they wrote.
	deadline := time.Now().Add(10 * time.Second)
	for len(s.Log()) < 3 || s.Log()[1].Status == 0 || s.Log()[2].Status == 0 {
		if time.Now().After(deadline) {
			t.Fatal("handlers did not end")
		}
		time.Sleep(10 * time.Millisecond)
	}
	sent := s.BytesSent()
	if sent[githubtest.KindBlob] >= size/2 {
		t.Errorf("bytes sent = %v: the blob kept streaming after the client stopped reading", sent)
	}
}

func TestServer_Stall_SendsThenHangs(t *testing.T) {
	t.Parallel()
	repo := githubtest.NewRepo(t)
	repo.Write("a.md", strings.Repeat("x", 4096))
	head := repo.Commit("a")
	s := githubtest.NewServer(t, "o", "r", repo)
	s.FailNext(githubtest.KindBlob, 1, githubtest.Stall(100))
	req, _ := http.NewRequest("GET", s.URL()+"repos/o/r/git/blobs/"+repo.BlobSHA(head, "a.md"), nil)
	req.Header.Set("Accept", "application/vnd.github.v3.raw")
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil || len(b) != 100 {
		t.Errorf("read %d bytes, err %v; want 100 then a timeout", len(b), err)
	}
}

// TestServer_CompareNullFields_AsGitHub: GitHub answers a mode-only change
// as "modified" with sha null and no line counts, and a submodule with
// blob_url and raw_url null.
func TestServer_CompareNullFields_AsGitHub(t *testing.T) {
	t.Parallel()
	repo := githubtest.NewRepo(t)
	repo.Write("run.md", "# run\n")
	repo.Write("edit.md", "v1\n")
	repo.Write("sub.md", "# soon a submodule\n")
	base := repo.Commit("base")
	repo.Chmod("run.md", true)
	repo.Write("edit.md", "v2\n")
	repo.Remove("sub.md")
	repo.Submodule("sub.md", base)
	head := repo.Commit("chmod +x, edit, submodule")
	s := githubtest.NewServer(t, "o", "r", repo)
	c := mustClient(t, s)

	cmpr, _, err := c.Repositories.CompareCommits(context.Background(), "o", "r", base, head, nil)
	if err != nil {
		t.Fatal(err)
	}
	type file struct {
		Status, Name    string
		SHA             *string
		Additions       int
		BlobURL, RawURL bool
	}
	var got []file
	for _, f := range cmpr.Files {
		got = append(got, file{f.GetStatus(), f.GetFilename(), f.SHA, f.GetAdditions(), f.BlobURL != nil, f.RawURL != nil})
	}
	sort.Slice(got, func(i, j int) bool { return got[i].Name < got[j].Name })
	edit := repo.BlobSHA(head, "edit.md")
	want := []file{
		{"modified", "edit.md", &edit, 1, true, true},
		{"modified", "run.md", nil, 0, true, true},
		{"changed", "sub.md", got[2].SHA, got[2].Additions, false, false}, // git counts the gitlink's line
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if got[2].SHA == nil || *got[2].SHA != base {
		t.Errorf("submodule sha = %v, want the commit it points at %s", got[2].SHA, base)
	}
}

// TestServer_CompareWithoutFiles: with CompareWithoutFiles the answer has
// no files key at all, as GitHub sends when it cannot list them.
func TestServer_CompareWithoutFiles(t *testing.T) {
	t.Parallel()
	repo := githubtest.NewRepo(t)
	repo.Write("a.md", "a\n")
	base := repo.Commit("base")
	repo.Write("a.md", "b\n")
	head := repo.Commit("head")
	s := githubtest.NewServer(t, "o", "r", repo)
	s.CompareWithoutFiles = true
	cmpr, _, err := mustClient(t, s).Repositories.CompareCommits(context.Background(), "o", "r", base, head, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cmpr.Files != nil || cmpr.GetAheadBy() != 1 {
		t.Errorf("files = %v, ahead by %d; want no files key, ahead by 1", cmpr.Files, cmpr.GetAheadBy())
	}
}

// A recursive tree listing whose tree array would be over the byte limit
// (GitHub's is 7 MB) answers the entries that fit and "truncated": true;
// one level of the same tree is not cut.
func TestServer_TreeOverTheByteLimit_Truncated(t *testing.T) {
	t.Parallel()
	repo := githubtest.NewRepo(t)
	for i := range 20 {
		repo.Write(fmt.Sprintf("규정/제%02d편/학칙 시행세칙 제%05d호.md", i, i), "# 학칙\n")
	}
	head := repo.Commit("twenty")
	s := githubtest.NewServer(t, "knue", "policies", repo)
	c := mustClient(t, s)
	whole, _, err := c.Git.GetTree(t.Context(), "knue", "policies", head, true)
	if err != nil || whole.GetTruncated() || len(whole.Entries) != 1+20+20 {
		t.Fatalf("under GitHub's limits: %d entries, truncated %v, %v; want 41 whole", len(whole.Entries), whole.GetTruncated(), err)
	}
	full, err := json.Marshal(whole.Entries)
	if err != nil {
		t.Fatal(err)
	}
	s.TruncateTreesOverBytes = len(full) / 2
	cut, _, err := c.Git.GetTree(t.Context(), "knue", "policies", head, true)
	if err != nil || !cut.GetTruncated() || len(cut.Entries) == 0 || len(cut.Entries) >= len(whole.Entries) {
		t.Fatalf("over %d bytes: %d entries, truncated %v, %v", s.TruncateTreesOverBytes, len(cut.Entries), cut.GetTruncated(), err)
	}
	if b, _ := json.Marshal(cut.Entries); len(b) > s.TruncateTreesOverBytes {
		t.Errorf("the cut listing's tree array is %d bytes, over %d", len(b), s.TruncateTreesOverBytes)
	}
	if b, _ := json.Marshal(whole.Entries[:len(cut.Entries)+1]); len(b) <= s.TruncateTreesOverBytes {
		t.Errorf("cut at %d entries, but %d fit in %d bytes", len(cut.Entries), len(cut.Entries)+1, s.TruncateTreesOverBytes)
	}
	one, _ := json.Marshal(whole.Entries[:1])
	s.TruncateTreesOverBytes = len(one) // exactly the array of the first entry
	if first, _, err := c.Git.GetTree(t.Context(), "knue", "policies", head, true); err != nil || len(first.Entries) != 1 || !first.GetTruncated() {
		t.Errorf("a limit of one entry's array: %d entries, truncated %v, %v; want 1, cut", len(first.Entries), first.GetTruncated(), err)
	}
	s.TruncateTreesOverBytes, s.TruncateTreesOver = -1, -1 // never cut
	if never, _, err := c.Git.GetTree(t.Context(), "knue", "policies", head, true); err != nil || never.GetTruncated() || len(never.Entries) != len(whole.Entries) {
		t.Errorf("negative limits: %d entries, truncated %v, %v; want all", len(never.Entries), never.GetTruncated(), err)
	}
	s.TruncateTreesOverBytes, s.TruncateTreesOver = len(full)/2, 0
	if diff := cmp.Diff(whole.Entries[:len(cut.Entries)], cut.Entries); diff != "" {
		t.Errorf("the cut listing is not the first entries (-want +got):\n%s", diff)
	}
	level, _, err := c.Git.GetTree(t.Context(), "knue", "policies", head, false)
	if err != nil || level.GetTruncated() || len(level.Entries) != 1 {
		t.Errorf("one level: %d entries, truncated %v, %v", len(level.Entries), level.GetTruncated(), err)
	}
}

// Settle waits for a request still being answered (here one that hangs
// until its client gives up) and then for quiet.
func TestServer_Settle_WaitsForTheRequestInFlight(t *testing.T) {
	t.Parallel()
	repo := githubtest.NewRepo(t)
	repo.Write("a.md", "# a\n")
	repo.Commit("a")
	s := githubtest.NewServer(t, "o", "r", repo)
	s.FailNext(githubtest.KindBranch, 1, githubtest.Hang())
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := (&http.Client{Timeout: 300 * time.Millisecond}).Get(s.URL() + "repos/o/r/branches/main")
		if err == nil {
			resp.Body.Close()
		}
	}()
	for len(s.Log()) == 0 {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	s.Settle(20 * time.Millisecond)
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("Settle returned after %v with a request in flight until its client gives up (300 ms)", took)
	}
	<-done
}
