package github_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
)

func TestTitles_Archive403WithoutRateLimit_ReadsBlobs(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{githubtest.KindArchiveLink, githubtest.KindArchive} {
		t.Run(kind, func(t *testing.T) {
			f := newFixture(t)
			head, files, want := archiveFixture(t, f, 12)
			// No Retry-After, X-RateLimit-Remaining well above 0, no rate
			// limit in the message: not a rate limit, and not this token's
			// access to the repository either (the blobs say that).
			f.srv.FailNext(kind, 1, githubtest.StatusError(http.StatusForbidden, "Forbidden"))
			src := f.source(t)

			got, failed, err := src.Titles(context.Background(), head, files, policy.DefaultMaxFileSize)
			if err != nil || len(failed) != 0 {
				t.Fatalf("Titles: failed %v, err %v; want the blobs read", failed, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Titles (-want +got):\n%s", diff)
			}
			if n := f.srv.Requests()[githubtest.KindBlob]; n != len(files) {
				t.Errorf("blob requests = %d, want %d", n, len(files))
			}
		})
	}
}

func TestTitles_403OnArchiveAndBlobs_ConfigErrorFromTheAPI(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head, files, _ := archiveFixture(t, f, 12)
	f.srv.FailNext(githubtest.AnyKind, -1, githubtest.StatusError(http.StatusForbidden, "Resource not accessible by personal access token"))

	_, _, err := f.source(t).Titles(context.Background(), head, files, policy.DefaultMaxFileSize)
	if !errors.Is(err, policy.ErrConfig) {
		t.Fatalf("Titles = %v, want ErrConfig: the API refuses this token", err)
	}
}

func TestTitles_ArchiveLinkSecondaryLimitWithoutRetryAfter_RateLimitNotConfig(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head, files, _ := archiveFixture(t, f, 12)
	// go-github's GetArchiveLink drops this body; its documentation URL is
	// what says "secondary rate limit".
	f.srv.FailNext(githubtest.KindArchiveLink, 1, githubtest.Fault{
		Status: http.StatusForbidden,
		Body:   `{"message":"You have exceeded a secondary rate limit.","documentation_url":"` + githubtest.SecondaryRateLimitDoc + `"}`,
	})

	_, _, err := f.source(t).Titles(context.Background(), head, files, policy.DefaultMaxFileSize)
	var rl *policy.RateLimitError
	if !errors.As(err, &rl) || rl.Kind != "secondary" || errors.Is(err, policy.ErrConfig) {
		t.Fatalf("Titles = %v, want a secondary rate limit, not a configuration error", err)
	}
}
