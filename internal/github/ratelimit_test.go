package github_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/retry"
)

func TestTitles_SecondaryLimitOnOneBlob_WaitedOutRunGoesOn(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head, files, want := policyFixture(t, f, 94)
	f.srv.FailNext(githubtest.KindBlob, 1, githubtest.SecondaryRateLimit(http.StatusTooManyRequests, time.Second))
	cfg := f.config()
	cfg.ArchiveThreshold = 100 // one blob request per file
	src := mustSource(t, cfg)

	got, failed, err := src.Titles(context.Background(), head, files, policy.DefaultMaxFileSize)
	if err != nil || len(failed) != 0 {
		t.Fatalf("Titles: failed %v, err %v; want the limit waited out", failed, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Titles (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]time.Duration{time.Second}, f.sleeps.got()); diff != "" {
		t.Errorf("sleeps (-want +got):\n%s", diff)
	}
	wantRequests(t, src, f.srv, 95)
}

func TestTitles_Secondary403OnOneBlob_WaitedOutForReal(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head, files, want := policyFixture(t, f, 3)
	// go-github remembers a typed 403 secondary limit and refuses every
	// request until it passes: the wait must be real for the retry to go.
	f.srv.FailNext(githubtest.KindBlob, 1, githubtest.SecondaryRateLimit(http.StatusForbidden, time.Second))
	cfg := f.config()
	cfg.Sleep = func(ctx context.Context, d time.Duration) error {
		f.sleeps.sleep(ctx, d)
		return retry.Sleep(ctx, d)
	}
	src := mustSource(t, cfg)

	got, failed, err := src.Titles(context.Background(), head, files, policy.DefaultMaxFileSize)
	if err != nil || len(failed) != 0 {
		t.Fatalf("Titles: failed %v, err %v; want the limit waited out", failed, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Titles (-want +got):\n%s", diff)
	}
	if n := f.srv.Requests()[githubtest.KindBlob]; n != 4 {
		t.Errorf("blob requests = %d, want 4 (one limited, retried)", n)
	}
}

func TestHead_SecondaryLimitUnderAMinute_WaitedOut(t *testing.T) {
	t.Parallel()
	// A minute or more ends the run: TestRateLimits_PrimaryAndSecondary_403And429.
	f := newFixture(t)
	want := f.repo.Commit("first")
	f.srv.FailNext(githubtest.KindCommitSHA, 1, githubtest.SecondaryRateLimit(http.StatusTooManyRequests, 59*time.Second))
	src := f.source(t)

	got, err := src.Head(context.Background())
	if err != nil || got != want {
		t.Fatalf("Head = %s, %v; want %s", got, err, want)
	}
	if diff := cmp.Diff([]time.Duration{59 * time.Second}, f.sleeps.got()); diff != "" {
		t.Errorf("sleeps (-want +got):\n%s", diff)
	}
	wantRequests(t, src, f.srv, 2)
}

func TestHead_SecondaryLimitPastTheDeadline_AbortsAtOnceWithRetryAt(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Commit("first")
	f.srv.FailNext(githubtest.KindCommitSHA, 1, githubtest.SecondaryRateLimit(http.StatusTooManyRequests, 30*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	src := f.source(t)

	_, err := src.Head(ctx)
	var rl *policy.RateLimitError
	if !errors.As(err, &rl) || rl.Kind != "secondary" || !rl.RetryAt.Equal(testNow.Add(30*time.Second)) {
		t.Fatalf("Head = %v, want a secondary rate limit saying retry at %v", err, testNow.Add(30*time.Second))
	}
	if got := f.sleeps.got(); len(got) != 0 {
		t.Errorf("slept %v: a wait past the deadline must not start", got)
	}
	wantRequests(t, src, f.srv, 1)
}

func TestHead_PrimaryLimit_NotWaitedEvenWithRetryAfter(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Commit("first")
	fault := githubtest.PrimaryRateLimit(http.StatusTooManyRequests, time.Now().Add(30*time.Minute))
	fault.Header.Set("Retry-After", "5")
	f.srv.FailNext(githubtest.KindCommitSHA, 1, fault)
	src := f.source(t)

	_, err := src.Head(context.Background())
	var rl *policy.RateLimitError
	if !errors.As(err, &rl) || rl.Kind != "primary" {
		t.Fatalf("Head = %v, want a primary rate limit", err)
	}
	if got := f.sleeps.got(); len(got) != 0 {
		t.Errorf("slept %v: a primary limit ends the run", got)
	}
}
