package github_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/github"
	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
)

// awaitRequests waits, up to two seconds, until the server saw n requests
// of kind.
func awaitRequests(t *testing.T, srv *githubtest.Server, kind string, n int) {
	t.Helper()
	for end := time.Now().Add(2 * time.Second); srv.Requests()[kind] < n; {
		if time.Now().After(end) {
			t.Fatalf("%s requests = %d, want %d before the read", kind, srv.Requests()[kind], n)
		}
		time.Sleep(time.Millisecond)
	}
}

// wantTitles reads the titles of files at head and wants them all, as
// want, none failed.
func wantTitles(t *testing.T, src *github.Source, head string, files []policy.File, want map[string]policy.Content) {
	t.Helper()
	got, failed, err := src.Titles(context.Background(), head, files, policy.DefaultMaxFileSize)
	if err != nil || len(failed) != 0 {
		t.Fatalf("Titles: failed %v, err %v", failed, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Titles (-want +got):\n%s", diff)
	}
}

func TestPrefetchArchive_LinkAndDownloadAskedAhead_TitlesTakesThem(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head, files, want := archiveFixture(t, f, 12)
	src := f.source(t)
	stop := src.PrefetchArchive(context.Background(), head, len(files))
	defer stop()
	awaitRequests(t, f.srv, githubtest.KindArchive, 1) // asked before any read

	wantTitles(t, src, head, files, want)
	c := f.srv.Requests()
	if c[githubtest.KindArchiveLink] != 1 || c[githubtest.KindArchive] != 1 || c.Total() != 2 {
		t.Errorf("requests %v, want the prefetch's link and download only", c)
	}
	wantRequests(t, src, f.srv, 2)
}

func TestPrefetchArchive_NoMoreThanTheThreshold_NothingAsked(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head, _, _ := archiveFixture(t, f, 12)
	src := f.source(t)
	stop := src.PrefetchArchive(context.Background(), head, 10) // the default threshold: blobs
	stop()
	wantRequests(t, src, f.srv, 0)
}

func TestPrefetchArchive_StoppedUntaken_NextReadAsksAgain(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head, files, want := archiveFixture(t, f, 12)
	src := f.source(t)
	stop := src.PrefetchArchive(context.Background(), head, len(files))
	awaitRequests(t, f.srv, githubtest.KindArchive, 1)
	stop()

	wantTitles(t, src, head, files, want)
	if c := f.srv.Requests(); c[githubtest.KindArchive] != 2 || c[githubtest.KindBlob] != 0 {
		t.Errorf("requests %v, want the archive asked again", c)
	}
}

func TestPrefetchArchive_DownloadFails_ReadAsksAgain(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head, files, want := archiveFixture(t, f, 12)
	f.srv.FailNext(githubtest.KindArchive, 1, githubtest.ServerError(http.StatusBadGateway))
	src := f.source(t)
	stop := src.PrefetchArchive(context.Background(), head, len(files))
	defer stop()
	awaitRequests(t, f.srv, githubtest.KindArchive, 1)

	wantTitles(t, src, head, files, want)
	if c := f.srv.Requests(); c[githubtest.KindArchiveLink] != 1 || c[githubtest.KindArchive] != 2 || c[githubtest.KindBlob] != 0 {
		t.Errorf("requests %v, want the prefetch's link and the download asked again", c)
	}
}

// A count not known yet asks for the link at once, before any listing of
// the commit's tree; the download once a later call gives the count; the
// read takes both.
func TestPrefetchArchive_CountUnknown_LinkAtOnce_DownloadWhenTheCountIsGiven(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head, files, want := archiveFixture(t, f, 12)
	src := f.source(t)
	stop := src.PrefetchArchive(context.Background(), head, -1)
	defer stop()
	awaitRequests(t, f.srv, githubtest.KindArchiveLink, 1)
	if c := f.srv.Requests(); c.Total() != 1 {
		t.Fatalf("requests %v before the tree was listed, want the link only", c)
	}
	if _, err := src.Tree(context.Background(), head); err != nil {
		t.Fatal(err)
	}
	noDownloadYet(t, f, "the count was known")
	defer src.PrefetchArchive(context.Background(), head, len(files))()
	awaitRequests(t, f.srv, githubtest.KindArchive, 1)

	wantTitles(t, src, head, files, want)
	wantRequests(t, src, f.srv, 3) // the tree, the link, the download
}

// A tree of no more policy files than the threshold leaves the link asked
// at once unused: let download as the tree streams by, or the count given,
// nothing is downloaded (the link's redirect is not followed) and the read
// takes blobs.
func TestPrefetchArchive_CountUnknown_SmallTree_LinkOnly_BlobsRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head, files, want := archiveFixture(t, f, 10)
	src := f.source(t)
	stop := src.PrefetchArchive(context.Background(), head, -1)
	src.DownloadWhenListed(head)
	if _, err := src.Tree(context.Background(), head); err != nil {
		t.Fatal(err)
	}
	defer src.PrefetchArchive(context.Background(), head, len(files))()
	awaitRequests(t, f.srv, githubtest.KindArchiveLink, 1)

	wantTitles(t, src, head, files, want)
	time.Sleep(20 * time.Millisecond)
	stop()
	if c := f.srv.Requests(); c[githubtest.KindArchiveLink] != 1 || c[githubtest.KindArchive] != 0 || c[githubtest.KindBlob] != 10 {
		t.Errorf("requests %v, want the link, no download and ten blobs", c)
	}
	wantRequests(t, src, f.srv, 12) // the tree, the link, ten blobs
}

// Let download once listed, a prefetch whose count is not known asks for
// the download as soon as a listing of the commit's tree shows more policy
// files than the threshold, with no later call giving the count; not
// before.
func TestPrefetchArchive_CountUnknown_DownloadWhenListed_AsTheTreeShowsMoreThanTheThreshold(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head, files, want := archiveFixture(t, f, 12)
	src := f.source(t)
	defer src.PrefetchArchive(context.Background(), head, -1)()
	src.DownloadWhenListed(head)
	awaitRequests(t, f.srv, githubtest.KindArchiveLink, 1)
	noDownloadYet(t, f, "the tree was listed")
	if _, err := src.Tree(context.Background(), head); err != nil {
		t.Fatal(err)
	}
	awaitRequests(t, f.srv, githubtest.KindArchive, 1)

	wantTitles(t, src, head, files, want)
	wantRequests(t, src, f.srv, 3) // the tree, the link, the download
}

// A read of a commit whose prefetch waits for the count takes its link and
// has the download asked: once each.
func TestPrefetchArchive_CountUnknown_ReadAsksLinkAndDownload(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head, files, want := archiveFixture(t, f, 12)
	src := f.source(t)
	defer src.PrefetchArchive(context.Background(), head, -1)()

	wantTitles(t, src, head, files, want)
	wantRequests(t, src, f.srv, 2)
}

// noDownloadYet fails the test when the archive was downloaded within a
// moment of now: a prefetch still waiting must not have asked for it
// before what it waits for (before).
func noDownloadYet(t *testing.T, f *fixture, before string) {
	t.Helper()
	time.Sleep(20 * time.Millisecond)
	if n := f.srv.Requests()[githubtest.KindArchive]; n != 0 {
		t.Fatalf("archive requests = %d before %s, want 0", n, before)
	}
}
