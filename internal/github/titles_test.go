package github_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/github"
	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
)

// hugeSize is a policy file far over the size limit, larger than a run
// should ever hold: 40 times the 1 MiB limit and more than twice allocBound, so a
// buffer of it fails the bound (200 MB took seconds to commit and serve).
const hugeSize = 40_000_000

// allocBound is how many bytes one Titles call may allocate in these tests
// (its own buffers, the fake's, the HTTP stack's): a generous margin over
// the 1 MiB limit (a Titles call allocates 0.4 to 8.5 MB), far under the
// huge file.
const allocBound = 16 << 20

// allocated runs f and returns the bytes the process allocated meanwhile
// (runtime.MemStats.TotalAlloc, which a buffer of the whole file would
// grow by at least its size).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// writeHuge writes a policy of hugeSize bytes whose title is title.
func writeHuge(repo *githubtest.Repo, path, title string) {
	head := "# " + title + "\n"
	repo.WriteFrom(path, io.MultiReader(strings.NewReader(head), githubtest.Fill('a', hugeSize-int64(len(head)))))
}

// changedFiles is what an incremental run reads: the files the compare
// lists as added or modified, their sizes unknown.
func changedFiles(t *testing.T, src *github.Source, base, head string) []policy.File {
	t.Helper()
	cs, err := src.Compare(context.Background(), base, head)
	if err != nil {
		t.Fatal(err)
	}
	var files []policy.File
	for _, c := range cs.Changes {
		if c.Status != policy.Removed {
			files = append(files, policy.File{Path: c.Path, SHA: c.SHA, Size: -1})
		}
	}
	return files
}

func mustTitles(t *testing.T, src *github.Source, commit string, files []policy.File) (got map[string]policy.Content, alloc uint64) {
	t.Helper()
	var failed map[string]error
	var err error
	alloc = allocated(func() {
		got, failed, err = src.Titles(context.Background(), commit, files, policy.DefaultMaxFileSize)
	})
	if err != nil || len(failed) != 0 {
		t.Fatalf("Titles: failed %v, err %v", failed, err)
	}
	return got, alloc
}

// TestTitles_HugeFile reads titles beside one huge file: of unknown size
// (an incremental run), of known size (from the tree) and last in the
// archive. The three read commits of one repository, so the 40 MB file is
// written, and hashed by git, once, not once for each (about a second of
// CPU under the race detector). Each subtest has a fake server of its own,
// so the requests it counts are its own; none runs in parallel (they
// measure the process's allocations).
func TestTitles_HugeFile(t *testing.T) {
	repo := githubtest.NewRepo(t)
	repo.Write("규정/작은 규정.md", "# 작은 규정\n")
	base := repo.Commit("base")
	writeHuge(repo, "규정/큰 규정.md", "큰 규정")
	known := repo.Commit("sizes from the tree")
	repo.Write("규정/작은 규정.md", "# 작은 규정 (개정)\n")
	incremental := repo.Commit("one huge file in an incremental run")
	repo.Remove("규정/작은 규정.md")
	fixtureOn := func(t *testing.T) *fixture {
		return &fixture{repo: repo, srv: githubtest.NewServer(t, owner, name, repo), sleeps: &sleeps{}}
	}
	t.Run("OfUnknownSize_BlobReadCutAtTheLimit", func(t *testing.T) {
		hugeFileOfUnknownSize(t, fixtureOn(t), base, incremental)
	})
	t.Run("OfKnownSize_NotDownloaded", func(t *testing.T) {
		hugeFileOfKnownSize(t, fixtureOn(t), known)
	})
	t.Run("ArchiveEntry_OverBudget_RestFromBlobs", func(t *testing.T) {
		hugeArchiveEntryOverBudget(t, fixtureOn(t)) // commits on incremental, without 작은 규정
	})
}

func hugeFileOfUnknownSize(t *testing.T, f *fixture, base, head string) {
	src := f.source(t)
	files := changedFiles(t, src, base, head)
	f.srv.ResetRequests()

	got, alloc := mustTitles(t, src, head, files)
	want := map[string]policy.Content{
		"규정/큰 규정.md":  {Size: hugeSize}, // exact: the answer's Content-Length
		"규정/작은 규정.md": {Size: int64(len("# 작은 규정 (개정)\n")), Title: "작은 규정 (개정)"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Titles (-want +got):\n%s", diff)
	}
	t.Logf("allocated %d bytes reading a %d-byte file", alloc, hugeSize)
	if alloc > allocBound {
		t.Errorf("allocated %d bytes reading titles, want at most %d: the huge file was held", alloc, allocBound)
	}
	if sent := f.srv.BytesSent()[githubtest.KindBlob]; sent > allocBound {
		t.Errorf("the fake sent %d blob bytes, want at most %d: the download was not cut", sent, allocBound)
	}
	if c := f.srv.Requests(); c[githubtest.KindBlob] != 2 || c.Total() != 2 {
		t.Errorf("requests = %v, want one blob request per file", c)
	}
}

func hugeFileOfKnownSize(t *testing.T, f *fixture, head string) {
	files := filesOf(t, f.repo, head)
	src := f.source(t)

	got, _ := mustTitles(t, src, head, files)
	want := map[string]policy.Content{
		"규정/큰 규정.md":  {Size: hugeSize},
		"규정/작은 규정.md": {Size: int64(len("# 작은 규정\n")), Title: "작은 규정"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Titles (-want +got):\n%s", diff)
	}
	for _, r := range f.srv.Log() {
		if strings.HasSuffix(r.Path, f.repo.BlobSHA(head, "규정/큰 규정.md")) {
			t.Errorf("the huge file was requested: %s", r.Path)
		}
	}
	wantRequests(t, src, f.srv, 1)
}

// policyFixture commits n small policies and returns the commit, the files
// (sizes from the tree) and the titles a run should read.
func policyFixture(t *testing.T, f *fixture, n int) (string, []policy.File, map[string]policy.Content) {
	t.Helper()
	want := make(map[string]policy.Content)
	for i := range n {
		body := fmt.Sprintf("# 규정 %d\n본문\n", i)
		path := fmt.Sprintf("규정/제%02d 규정.md", i)
		f.repo.Write(path, body)
		want[path] = policy.Content{Size: int64(len(body)), Title: fmt.Sprintf("규정 %d", i)}
	}
	head := f.repo.Commit("policies")
	return head, filesOf(t, f.repo, head), want
}

// archiveFixture is policyFixture with the sizes unknown, as a compare
// gives them: n over the archive threshold reads the tarball.
func archiveFixture(t *testing.T, f *fixture, n int) (string, []policy.File, map[string]policy.Content) {
	t.Helper()
	head, files, want := policyFixture(t, f, n)
	for i := range files {
		files[i].Size = -1
	}
	return head, files, want
}

func TestTitles_OversizedArchiveEntry_SkippedUnreadThenSizedByBlob(t *testing.T) {
	f := newFixture(t)
	const size = 3 << 20
	f.repo.WriteFrom("규정/큰 규정.md", io.MultiReader(strings.NewReader("# 큰 규정\n"), githubtest.Fill('a', size-int64(len("# 큰 규정\n")))))
	head, files, want := archiveFixture(t, f, 12)
	want["규정/큰 규정.md"] = policy.Content{Size: size}
	src := f.source(t)

	got, _ := mustTitles(t, src, head, files)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Titles (-want +got):\n%s", diff)
	}
	// Its archive bytes cannot be checked against the blob without reading
	// them, and .gitattributes may change a size: one blob request, cut.
	if c := f.srv.Requests(); c[githubtest.KindArchive] != 1 || c[githubtest.KindBlob] != 1 {
		t.Errorf("requests = %v, want the archive and one blob", c)
	}
}

func hugeArchiveEntryOverBudget(t *testing.T, f *fixture) {
	// the huge file sorts after 규정/제.. : last in the archive
	head, files, want := archiveFixture(t, f, 12)
	want["규정/큰 규정.md"] = policy.Content{Size: hugeSize}
	cfg := f.config()
	cfg.ArchiveSlack = 1 << 20
	src := mustSource(t, cfg)

	got, alloc := mustTitles(t, src, head, files)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Titles (-want +got):\n%s", diff)
	}
	t.Logf("allocated %d bytes reading a %d-byte file among 12 from the archive", alloc, hugeSize)
	if alloc > allocBound {
		t.Errorf("allocated %d bytes, want at most %d", alloc, allocBound)
	}
	if c := f.srv.Requests(); c[githubtest.KindArchive] != 1 || c[githubtest.KindBlob] != 1 {
		t.Errorf("requests = %v, want the archive and one blob", c)
	}
}

func TestTitles_GzipBombEntry_ArchiveAbandonedUnread(t *testing.T) {
	f := newFixture(t)
	head, files, want := archiveFixture(t, f, 12)
	// 1 GiB of zeros compresses to about a megabyte: its header alone says
	// it would pass the budget, so not a byte of it is inflated.
	f.srv.ArchiveExtra = []githubtest.Generated{{Path: "0/bomb.bin", Size: 1 << 30}}
	src := f.source(t)

	got, alloc := mustTitles(t, src, head, files)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Titles (-want +got):\n%s", diff)
	}
	t.Logf("allocated %d bytes past a 1 GiB gzip bomb", alloc)
	if alloc > allocBound {
		t.Errorf("allocated %d bytes, want at most %d", alloc, allocBound)
	}
	if c := f.srv.Requests(); c[githubtest.KindArchive] != 1 || c[githubtest.KindBlob] != len(files) {
		t.Errorf("requests = %v, want the archive abandoned and %d blobs", c, len(files))
	}
}

func TestTitles_GzipBombOfManyEntries_DecompressedBytesBounded(t *testing.T) {
	f := newFixture(t)
	head, files, want := archiveFixture(t, f, 12)
	// 64 entries of 16 MiB: each fits the budget, all together do not.
	for i := range 64 {
		f.srv.ArchiveExtra = append(f.srv.ArchiveExtra, githubtest.Generated{Path: fmt.Sprintf("0/bomb%02d.bin", i), Size: 16 << 20})
	}
	cfg := f.config()
	cfg.ArchiveSlack = 32 << 20
	src := mustSource(t, cfg)

	got, alloc := mustTitles(t, src, head, files)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Titles (-want +got):\n%s", diff)
	}
	if alloc > allocBound {
		t.Errorf("allocated %d bytes, want at most %d", alloc, allocBound)
	}
	if c := f.srv.Requests(); c[githubtest.KindArchive] != 1 || c[githubtest.KindBlob] != len(files) {
		t.Errorf("requests = %v, want the archive abandoned after its budget and %d blobs", c, len(files))
	}
}

// lengthless drops the Content-Length of blob answers, as a proxy that
// re-chunks them may.
type lengthless struct{ next http.RoundTripper }

func (l lengthless) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(r)
	if err == nil && strings.Contains(r.URL.Path, "/git/blobs/") {
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
	}
	return resp, err
}

func TestTitles_LargeBlobWithoutLength_CutAfterLimitPlusOne(t *testing.T) {
	f := newFixture(t)
	// half again allocBound: a download not cut would send, and a buffer
	// of it allocate, more than the bound
	const size = allocBound * 3 / 2
	f.repo.WriteFrom("규정/큰 규정.md", io.MultiReader(strings.NewReader("# 큰 규정\n"), githubtest.Fill('a', size)))
	head := f.repo.Commit("large")
	cfg := f.config()
	cfg.HTTPClient = &http.Client{Transport: lengthless{http.DefaultTransport}}
	src := mustSource(t, cfg)
	files := []policy.File{{Path: "규정/큰 규정.md", SHA: f.repo.BlobSHA(head, "규정/큰 규정.md"), Size: -1}}

	got, alloc := mustTitles(t, src, head, files)
	want := map[string]policy.Content{"규정/큰 규정.md": {Size: policy.DefaultMaxFileSize + 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Titles (-want +got):\n%s", diff)
	}
	if alloc > allocBound {
		t.Errorf("allocated %d bytes, want at most %d", alloc, allocBound)
	}
	if sent := f.srv.BytesSent()[githubtest.KindBlob]; sent > allocBound {
		t.Errorf("the fake sent %d blob bytes, want at most %d: the download was not cut", sent, allocBound)
	}
}

// treeFiles lists the commit's tree through src (as a run does before it
// reads titles) and returns its policy files.
func treeFiles(t *testing.T, src *github.Source, commit string) []policy.File {
	t.Helper()
	tree, err := src.Tree(context.Background(), commit)
	if err != nil {
		t.Fatal(err)
	}
	var files []policy.File
	for _, f := range tree {
		if policy.IsPolicyPath(f.Path) {
			files = append(files, f)
		}
	}
	return files
}

// TestTitles_AttachmentsOverTheSlack_ArchiveBoundFromTree: a repository
// whose other files hold more than the fixed slack is still read from one
// archive: the bound is the tree's own total size. A gzip bomb (entries
// the tree does not list) is still abandoned unread.
func TestTitles_AttachmentsOverTheSlack_ArchiveBoundFromTree(t *testing.T) {
	f := newFixture(t)
	for i := range 3 { // sorts before 규정/: inflated before any policy
		f.repo.WriteFrom(fmt.Sprintf("attachments/scan%d.pdf", i), githubtest.Fill('%', 1<<20))
	}
	head, _, want := policyFixture(t, f, 12)
	cfg := f.config()
	cfg.ArchiveSlack = 1 << 20 // 3 MiB of attachments: over it
	src := mustSource(t, cfg)
	files := treeFiles(t, src, head)
	f.srv.ResetRequests()

	got, _ := mustTitles(t, src, head, files)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Titles (-want +got):\n%s", diff)
	}
	if c := f.srv.Requests(); c[githubtest.KindArchive] != 1 || c[githubtest.KindBlob] != 0 {
		t.Errorf("requests = %v, want the archive and no blob", c)
	}

	f.srv.ArchiveExtra = []githubtest.Generated{{Path: "0/bomb.bin", Size: 1 << 30}}
	f.srv.ResetRequests()
	got, alloc := mustTitles(t, src, head, files)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Titles past a bomb (-want +got):\n%s", diff)
	}
	if alloc > allocBound {
		t.Errorf("allocated %d bytes past a 1 GiB gzip bomb, want at most %d", alloc, allocBound)
	}
	if c := f.srv.Requests(); c[githubtest.KindArchive] != 1 || c[githubtest.KindBlob] != len(files) {
		t.Errorf("requests = %v, want the archive abandoned and %d blobs", c, len(files))
	}
}
