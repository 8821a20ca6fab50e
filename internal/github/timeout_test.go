package github_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/github"
	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
)

// liveness bounds a call that must not hang on a stalled download: far
// longer than the timeouts these tests set, far shorter than the defaults.
const liveness = 20 * time.Second

// idle is the idle timeout these tests set: short, yet long enough that a
// request of a loaded test machine is not taken for a stall.
const idle = time.Second

func titlesWithin(t *testing.T, src *github.Source, commit string, files []policy.File) map[string]policy.Content {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), liveness)
	defer cancel()
	got, failed, err := src.Titles(ctx, commit, files, policy.DefaultMaxFileSize)
	if err != nil || len(failed) != 0 {
		t.Fatalf("Titles: failed %v, err %v", failed, err)
	}
	return got
}

func TestTitles_ArchiveStalls_LeftForBlobsAtOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head, files, want := archiveFixture(t, f, 12)
	f.srv.FailNext(githubtest.KindArchive, -1, githubtest.Stall(64))
	cfg := f.config()
	cfg.IdleTimeout = idle
	src := mustSource(t, cfg)

	if diff := cmp.Diff(want, titlesWithin(t, src, head, files)); diff != "" {
		t.Errorf("Titles (-want +got):\n%s", diff)
	}
	if c := f.srv.Requests(); c[githubtest.KindArchive] != 1 || c[githubtest.KindBlob] < len(files) {
		t.Errorf("requests = %v, want one stalled download (not retried) and the %d blobs", c, len(files))
	}
}

func TestTitles_ArchiveTooLong_LeftForBlobs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head, files, want := archiveFixture(t, f, 12)
	f.srv.FailNext(githubtest.KindArchive, -1, githubtest.Stall(64))
	cfg := f.config()
	cfg.IdleTimeout = time.Hour
	cfg.ArchiveTimeout = 200 * time.Millisecond
	src := mustSource(t, cfg)

	if diff := cmp.Diff(want, titlesWithin(t, src, head, files)); diff != "" {
		t.Errorf("Titles (-want +got):\n%s", diff)
	}
	if c := f.srv.Requests(); c[githubtest.KindArchive] != 1 || c[githubtest.KindBlob] != len(files) {
		t.Errorf("requests = %v, want one download cut by its bound and %d blobs", c, len(files))
	}
}

func TestTitles_BlobStalls_Retried(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Write("a.md", "# 가\n본문\n")
	f.repo.Write("b.md", "# 나\n")
	head := f.repo.Commit("two")
	files := filesOf(t, f.repo, head)
	f.srv.FailNext(githubtest.KindBlob, 1, githubtest.Stall(3))
	cfg := f.config()
	cfg.IdleTimeout = idle
	src := mustSource(t, cfg)

	want := map[string]policy.Content{"a.md": {Size: int64(len("# 가\n본문\n")), Title: "가"}, "b.md": {Size: int64(len("# 나\n")), Title: "나"}}
	if diff := cmp.Diff(want, titlesWithin(t, src, head, files)); diff != "" {
		t.Errorf("Titles (-want +got):\n%s", diff)
	}
	if n := f.srv.Requests()[githubtest.KindBlob]; n < 3 {
		t.Errorf("blob requests = %d, want 3 or more (the stalled one retried)", n)
	}
	if len(f.sleeps.got()) == 0 {
		t.Error("no retry: the stalled blob was not retried")
	}
}
