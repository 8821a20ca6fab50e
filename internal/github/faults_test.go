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
)

func TestRateLimits_PrimaryAndSecondary_403And429(t *testing.T) {
	t.Parallel()
	// X-RateLimit-Reset is absolute; go-github only remembers a reset in the future.
	reset := time.Now().Add(37 * time.Minute).Truncate(time.Second).UTC()
	for _, tc := range []struct {
		name    string
		fault   githubtest.Fault
		kind    string
		retryAt time.Time
	}{
		{"primary 403", githubtest.PrimaryRateLimit(http.StatusForbidden, reset), "primary", reset},
		{"primary 429", githubtest.PrimaryRateLimit(http.StatusTooManyRequests, reset), "primary", reset},
		// a wait over a minute is not waited out: the run ends saying when
		{"secondary 403", githubtest.SecondaryRateLimit(http.StatusForbidden, 2*time.Minute), "secondary", testNow.Add(2 * time.Minute)},
		{"secondary 429", githubtest.SecondaryRateLimit(http.StatusTooManyRequests, 2*time.Minute), "secondary", testNow.Add(2 * time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			head := f.repo.Commit("first")
			f.srv.FailNext(githubtest.AnyKind, 1, tc.fault)
			src := f.source(t)

			_, err := src.Head(context.Background())
			if !errors.Is(err, policy.ErrRateLimited) {
				t.Fatalf("Head = %v, want ErrRateLimited", err)
			}
			if errors.Is(err, policy.ErrConfig) {
				t.Errorf("a rate limit is not a configuration error: %v", err)
			}
			var rl *policy.RateLimitError
			if !errors.As(err, &rl) {
				t.Fatalf("Head = %v, want a *policy.RateLimitError", err)
			}
			want := policy.RateLimitError{API: "github", Kind: tc.kind, RetryAt: tc.retryAt}
			if diff := cmp.Diff(want, *rl); diff != "" {
				t.Errorf("rate limit (-want +got):\n%s", diff)
			}
			wantRequests(t, src, f.srv, 1)
			if got := f.sleeps.got(); len(got) != 0 {
				t.Errorf("slept %v: a rate limit is not retried", got)
			}

			// go-github refuses further calls locally until the reset: still a rate limit.
			_, err = src.Tree(context.Background(), head)
			if tc.name == "primary 403" || tc.name == "primary 429" || tc.name == "secondary 403" {
				if !errors.Is(err, policy.ErrRateLimited) {
					t.Fatalf("Tree after the limit = %v, want ErrRateLimited", err)
				}
				wantRequests(t, src, f.srv, 1)
			}
		})
	}
}

func TestRetry_502TwiceThenOK(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	want := f.repo.Commit("first")
	f.srv.FailNext(githubtest.KindCommitSHA, 2, githubtest.ServerError(http.StatusBadGateway))
	src := f.source(t)

	got, err := src.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Head = %s, want %s", got, want)
	}
	wantRequests(t, src, f.srv, 3)
	if diff := cmp.Diff([]time.Duration{time.Second, 2 * time.Second}, f.sleeps.got()); diff != "" {
		t.Errorf("sleeps (-want +got):\n%s", diff)
	}
}

func TestRetry_5xxForever_ErrorAfterTries(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head := f.repo.Commit("first")
	f.srv.FailNext(githubtest.AnyKind, -1, githubtest.ServerError(http.StatusServiceUnavailable))
	src := f.source(t)

	_, err := src.Tree(context.Background(), head)
	if err == nil {
		t.Fatal("Tree succeeded against a dead server")
	}
	if errors.Is(err, policy.ErrRateLimited) || errors.Is(err, policy.ErrConfig) || errors.Is(err, policy.ErrNotFound) {
		t.Errorf("Tree = %v: a 5xx is none of the sentinels", err)
	}
	wantRequests(t, src, f.srv, 4)
	if diff := cmp.Diff([]time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, f.sleeps.got()); diff != "" {
		t.Errorf("sleeps (-want +got):\n%s", diff)
	}
}

func TestRetry_TimeoutIsRetried(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	want := f.repo.Commit("first")
	f.srv.FailNext(githubtest.AnyKind, 1, githubtest.Hang())
	cfg := f.config()
	// the hang waits the timeout out; an answered try must not, even on a busy machine
	cfg.HTTPClient = &http.Client{Timeout: time.Second}
	src := mustSource(t, cfg)

	got, err := src.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Head = %s, want %s", got, want)
	}
	if n := src.Requests(); n != 2 {
		t.Errorf("Requests() = %d, want 2", n)
	}
}

func TestRetry_ContextCancelledStops(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Commit("first")
	f.srv.FailNext(githubtest.AnyKind, -1, githubtest.ServerError(http.StatusBadGateway))
	ctx, cancel := context.WithCancel(context.Background())
	cfg := f.config()
	cfg.Sleep = func(context.Context, time.Duration) error { cancel(); return context.Canceled }
	src := mustSource(t, cfg)

	if _, err := src.Head(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Head = %v, want context.Canceled", err)
	}
	wantRequests(t, src, f.srv, 1)
}

func TestRetry_4xxNotRetried(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head := f.repo.Commit("first")
	f.srv.FailNext(githubtest.KindTree, 1, githubtest.StatusError(http.StatusUnauthorized, "Bad credentials"))
	src := f.source(t)

	if _, err := src.Tree(context.Background(), head); !errors.Is(err, policy.ErrConfig) {
		t.Fatalf("Tree = %v, want ErrConfig", err)
	}
	wantRequests(t, src, f.srv, 1)
}
