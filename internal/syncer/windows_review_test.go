package syncer_test

// Tests a reviewer of 764af06 wrote, each failing there: what stops a
// first sync's windows is said as it is, and the budget's reservation
// counts every write.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/github"
	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
	"github.com/knue/syncjob/internal/syncer"
)

// windowLogs is a log buffer safe for the run's goroutines.
type windowLogs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *windowLogs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *windowLogs) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// TestWindows_PrimaryRateLimitInALaterWindow_FailsNamingIt: GitHub's
// primary rate limit in a later window's listing (its reset after the
// deadline) fails the run naming it, as a whole run does (DESIGN: "a
// primary limit ... aborts the run with the time to retry"); it was
// dropped as out of time, the run partial and blaming the write budget.
func TestWindows_PrimaryRateLimitInALaterWindow_FailsNamingIt(t *testing.T) {
	t.Parallel()
	const n = 120
	for _, windowed := range []bool{false, true} {
		r := newCFRig(t, n, nil)
		ctx := newNearingDeadline() // an hour ahead
		opt := syncer.Options{BatchSize: 50, Concurrency: 1}
		if windowed {
			opt.FirstSyncWindow = 40
			armed := false
			r.bulk.after = func(int) {
				if !armed && len(r.policyNames()) > 0 {
					armed = true
					r.gh.FailNext(githubtest.KindTree, 1, githubtest.PrimaryRateLimit(403, time.Now().Add(2*time.Hour)))
				}
			}
		} else {
			r.gh.FailNext(githubtest.KindTree, 1, githubtest.PrimaryRateLimit(403, time.Now().Add(2*time.Hour)))
		}
		res, err := r.run(ctx, opt)
		sum := res.Summary
		t.Logf("windowed %v: err %v; status %s, stopped early %v, waiting %d", windowed, err, sum.Status, sum.StoppedEarly, sum.Waiting)
		if err == nil || !errors.Is(err, policy.ErrRateLimited) || strings.Contains(err.Error(), "DAILY_WRITE_BUDGET") {
			t.Errorf("windowed %v: %v (status %s): want the rate limit named, with when to retry, not the write budget", windowed, err, sum.Status)
		}
	}
}

// TestWindows_HistoryUnreadable_FailsNotCalledSpent: the run history,
// unreadable when a later window asks whether the budget is spent, fails
// the run; it was logged as "the daily write budget is spent" and the rest
// counted as waiting for it.
func TestWindows_HistoryUnreadable_FailsNotCalledSpent(t *testing.T) {
	t.Parallel()
	const n = 120
	r := newCFRig(t, n, nil)
	var logs windowLogs
	r.s.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	opt := syncer.Options{BatchSize: 50, FirstSyncWindow: 40, Concurrency: 1, DailyWriteBudget: 100000}
	armed := false
	r.bulk.after = func(int) {
		if !armed && len(r.policyNames()) > 0 {
			armed = true
			var fs []cloudflaretest.Fault
			for range 20 {
				fs = append(fs, cloudflaretest.ServerError(500))
			}
			r.cf.FailListing(registry.RunPrefix, fs...)
		}
	}
	res, err := r.run(t.Context(), opt)
	sum := res.Summary
	t.Logf("err %v; status %s, waiting %d, unreached %d, stopped early %v", err, sum.Status, sum.Waiting, sum.Unreached, sum.StoppedEarly)
	if err == nil || sum.Status != policy.RunFailed {
		t.Fatalf("%v, %s: want failed (the history could not be read)", err, sum.Status)
	}
	if strings.Contains(logs.String(), "daily write budget is spent") {
		t.Errorf("logged that the budget is spent; it could not be read")
	}
	if sum.Waiting > 0 && !sum.StoppedEarly {
		t.Errorf("failed run records %d waiting, not stopped early: status says they wait for DAILY_WRITE_BUDGET", sum.Waiting)
	}
}

// treeHookSource calls hook after each tree listing (the call counted
// from 1).
type treeHookSource struct {
	*github.Source
	mu    sync.Mutex
	calls int
	hook  func(call int)
}

func (h *treeHookSource) TreeKeeping(ctx context.Context, commit string, keep func(string) bool) ([]policy.File, int, error) {
	h.mu.Lock()
	h.calls++
	c := h.calls
	h.mu.Unlock()
	files, n, err := h.Source.TreeKeeping(ctx, commit, keep)
	if h.hook != nil {
		h.hook(c)
	}
	return files, n, err
}

// TestWindows_LaterWindowSpentAtItsFit_ReservationCountsEveryWrite: a
// later window that passed budgetSpent but finds the budget spent at its
// fit (the day's spend grew meanwhile) still reserves the failure records
// it writes for its unread files: a kill at any bulk write leaves the
// run's history counting every write it made.
func TestWindows_LaterWindowSpentAtItsFit_ReservationCountsEveryWrite(t *testing.T) {
	t.Parallel()
	const n, size = 120, 40
	windows, _ := windowsOf(t, n, size)
	r := newCFRig(t, n, nil)
	r.repo.Write(".gitattributes", "x/** export-ignore\n")
	extra := 0
	for i := 0; extra < 60; i++ {
		name := fmt.Sprintf("읽지 못할 정책 %03d", i)
		h := fnv.New32a()
		_, _ = io.WriteString(h, name)
		if h.Sum32()%uint32(windows) != 1 {
			continue
		}
		r.repo.Write("x/"+name+".md", fmt.Sprintf("# %s\n", name))
		extra++
	}
	r.head = r.repo.Commit("unreadable in window 1")
	r.gh.FailWithin(githubtest.KindBlob, "", githubtest.ServerError(500))
	hs := &treeHookSource{Source: r.s.Source.(*github.Source)}
	r.s.Source = hs
	const budget = 100000
	hs.hook = func(call int) {
		if call != 2 { // window 1's listing, after its budgetSpent
			return
		}
		other := policy.RunSummary{RunID: "other", Status: policy.RunSuccess, BillableWrites: budget, Timestamp: r.clock.Now().Format(policy.TimeLayout)}
		if failed := r.s.Registry.Write(context.Background(), registry.RunReservation(other, r.clock.Now())); len(failed) > 0 {
			t.Errorf("inject: %v", failed)
		}
	}
	worst := int64(1 << 62)
	reservation := func() int64 {
		for _, k := range r.cf.Keys() {
			if strings.HasPrefix(k, registry.RunPrefix) && strings.HasSuffix(k, ":run001") {
				v, _, _ := r.cf.Value(k)
				var s policy.RunSummary
				_ = json.Unmarshal(v, &s)
				return s.BillableWrites
			}
		}
		return 0
	}
	var mu sync.Mutex
	r.bulk.after = func(int) { // a kill here leaves the reservation as the count
		mu.Lock()
		defer mu.Unlock()
		if res := reservation(); res > 0 {
			// the injected write is not this run's
			worst = min(worst, res-(r.s.Registry.Usage().Writes-1))
		}
	}
	res, err := r.run(t.Context(), syncer.Options{BatchSize: 50, FirstSyncWindow: size, DailyWriteBudget: budget, LeaseTTL: time.Hour})
	sum := res.Summary
	t.Logf("%v; %s, %d added, %d failed, %d waiting; worst reservation slack %d", err, sum.Status, sum.Added, len(sum.Failures), sum.Waiting, worst)
	if worst < 0 {
		t.Errorf("a kill after a bulk write would leave a reservation %d writes short of what the run wrote", -worst)
	}
}
