package syncer_test

// Tests a reviewer of 6c0a5b9 wrote, each failing there.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/github"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
	"github.com/knue/syncjob/internal/syncer"
)

// outcome is what a run's caller sees: status, stopped early, and the
// exit code's class.
type outcome struct {
	status       string
	stoppedEarly bool
	exit         int
}

func outcomeOf(res syncer.Result, err error) outcome {
	exit := 0
	switch {
	case err == nil:
	case errors.Is(err, syncer.ErrPartial):
		exit = 3
	default:
		exit = 1
	}
	return outcome{res.Summary.Status, res.Summary.StoppedEarly, exit}
}

// TestWindows_HistoryRetryPastTheDeadline_SameStopAtEitherBudgetRead: a
// later window reads the run history twice before it writes — budgetSpent,
// then fitBudget — and a 502 whose retry would end past the deadline is
// the same fault at either. At fitBudget it is dropped as a deadline stop
// (partial, stopped early, exit 3); at budgetSpent it fails the run
// (exit 1), the windows before it having written all the same.
func TestWindows_HistoryRetryPastTheDeadline_SameStopAtEitherBudgetRead(t *testing.T) {
	t.Parallel()
	const n = 120
	got := map[string]outcome{}
	for _, at := range []string{"budgetSpent", "fitBudget"} {
		r := newCFRig(t, n, nil)
		ctx := newNearingDeadline()
		opt := syncer.Options{BatchSize: 50, FirstSyncWindow: 40, Concurrency: 1, StopBefore: 100 * time.Millisecond, DailyWriteBudget: 100000}
		arm := func() {
			r.cf.FailListing(registry.RunPrefix, cloudflaretest.ServerError(502))
			ctx.near(400 * time.Millisecond)
		}
		if at == "budgetSpent" {
			armed := false
			r.bulk.after = func(int) { // window 0's writes landed: the next history read is window 1's budgetSpent
				if !armed && len(r.policyNames()) > 0 {
					armed = true
					arm()
				}
			}
		} else {
			hs := &treeHookSource{Source: r.s.Source.(*github.Source)}
			r.s.Source = hs
			hs.hook = func(call int) { // window 1's listing, after its budgetSpent: the next is its fit's
				if call == 2 {
					arm()
				}
			}
		}
		res, err := r.run(ctx, opt)
		got[at] = outcomeOf(res, err)
		t.Logf("at %s: %v; %+v, waiting %d, %d policies written", at, err, got[at], res.Summary.Waiting, len(r.policyNames()))
	}
	if got["budgetSpent"] != got["fitBudget"] {
		t.Errorf("the same fault ends the windows two ways: at budgetSpent %+v, at fitBudget %+v", got["budgetSpent"], got["fitBudget"])
	}
}

// TestWindows_Cloudflare429PastTheDeadline_SameStopAtFitOrApply: a
// Cloudflare 429 whose block (5 s, short enough for the record to wait
// out) ends past the deadline, met by a
// later window: at its first bulk write the writes wait (partial, stopped
// early, exit 3) — as in a whole run's apply and in window 0's —; met one
// request earlier, at its fit's history read, it fails the run (exit 1).
func TestWindows_Cloudflare429PastTheDeadline_SameStopAtFitOrApply(t *testing.T) {
	t.Parallel()
	const n = 120
	got := map[string]outcome{}
	for _, at := range []string{"fit", "reservation", "apply"} {
		r := newCFRig(t, n, nil)
		ctx := newNearingDeadline()
		opt := syncer.Options{BatchSize: 50, FirstSyncWindow: 40, Concurrency: 1, DailyWriteBudget: 100000, StopBefore: 100 * time.Millisecond}
		hs := &treeHookSource{Source: r.s.Source.(*github.Source)}
		r.s.Source = hs
		inWindow1 := false
		hs.hook = func(call int) {
			if call == 2 {
				inWindow1 = true
				ctx.near(time.Second)
				if at == "fit" {
					r.cf.FailListing(registry.RunPrefix, cloudflaretest.RateLimit(5*time.Second))
				}
			}
		}
		bulks := 0
		r.bulk.before = func(int) {
			if at == "fit" || !inWindow1 {
				return
			}
			// window 1's reservation is its first bulk write, its first queue bulk the second
			if bulks++; (at == "reservation" && bulks == 1) || (at == "apply" && bulks == 2) {
				r.cf.FailNext(cloudflaretest.RateLimit(5 * time.Second))
			}
		}
		res, err := r.run(ctx, opt)
		got[at] = outcomeOf(res, err)
		t.Logf("at %s: %v; %+v, waiting %d, %d policies written", at, err, got[at], res.Summary.Waiting, len(r.policyNames()))
	}
	for _, at := range []string{"fit", "reservation"} {
		if got[at] != got["apply"] {
			t.Errorf("the same 429 ends the windows two ways: at the %s %+v, at the apply %+v", at, got[at], got["apply"])
		}
	}
}

var _ = policy.RunFailed

// limitAtDeadline answers tree listing number call with GitHub's primary
// rate limit (reset in two hours), the run's deadline passing as it does:
// the limit met by a listing that ran into the deadline.
type limitAtDeadline struct {
	*github.Source
	ctx   *nearingDeadline
	call  int
	calls int
	fail  error // nil: GitHub's primary rate limit
}

func (s *limitAtDeadline) TreeKeeping(ctx context.Context, commit string, keep func(string) bool) ([]policy.File, int, error) {
	s.calls++
	if s.calls == s.call {
		s.ctx.pass()
		time.Sleep(50 * time.Millisecond) // the run's contexts hear of it
		if s.fail != nil {
			return nil, 0, s.fail
		}
		return nil, 0, fmt.Errorf("github: tree: %w", &policy.RateLimitError{API: "github", Kind: "primary", RetryAt: time.Now().Add(2 * time.Hour)})
	}
	return s.Source.TreeKeeping(ctx, commit, keep)
}

// TestWindows_PrimaryRateLimitAsTheDeadlinePasses_FailsNamingIt: GitHub's
// primary rate limit (reset past the deadline) met by a later window's
// listing as the deadline passes is dropped as "out of time" — partial,
// stopped early, the limit named nowhere — where a whole run failing the
// same way fails naming it (6c0a5b9 made the limit fail the run, but only
// while the deadline has not passed).
func TestWindows_PrimaryRateLimitAsTheDeadlinePasses_FailsNamingIt(t *testing.T) {
	t.Parallel()
	const n = 120
	for _, windowed := range []bool{true} { // a whole run: its listing is its first, beside the lease
		r := newCFRig(t, n, nil)
		ctx := newNearingDeadline()
		src := &limitAtDeadline{Source: r.s.Source.(*github.Source), ctx: ctx, call: 1}
		opt := syncer.Options{BatchSize: 50, Concurrency: 1}
		if windowed {
			opt.FirstSyncWindow, src.call = 40, 2
		}
		r.s.Source = src
		res, err := r.run(ctx, opt)
		t.Logf("windowed %v: %v; %+v", windowed, err, outcomeOf(res, err))
		if err == nil || !errors.Is(err, policy.ErrRateLimited) {
			t.Errorf("windowed %v: %v (%s): want the rate limit named, with when to retry", windowed, err, res.Summary.Status)
		}
	}
}

// TestWindows_ConfigErrorAsTheDeadlinePasses_FailsAsConfig: a
// configuration error (bad credentials) met by a later window's listing as
// the deadline passes fails the run as a configuration error (exit 2), as
// a whole run's does; it is no stop for time (a reviewer of 6c0a5b9).
func TestWindows_ConfigErrorAsTheDeadlinePasses_FailsAsConfig(t *testing.T) {
	t.Parallel()
	r := newCFRig(t, 120, nil)
	ctx := newNearingDeadline()
	r.s.Source = &limitAtDeadline{Source: r.s.Source.(*github.Source), ctx: ctx, call: 2, fail: fmt.Errorf("github: tree: %w: bad credentials", policy.ErrConfig)}
	res, err := r.run(ctx, syncer.Options{BatchSize: 50, Concurrency: 1, FirstSyncWindow: 40})
	if !errors.Is(err, policy.ErrConfig) || res.Summary.Status != policy.RunFailed {
		t.Errorf("%v (%s): want the configuration error, failed", err, res.Summary.Status)
	}
}
