package syncer_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/syncer"
)

// nearingDeadline is a context whose deadline a test brings near, or
// passes, at a chosen write instead of at a chosen instant, so that a test
// of running out of time neither sleeps nor depends on the machine's speed.
// Its deadline is a real one: the run reads it with ctx.Deadline(), and
// when it passes, Done closes and Err is context.DeadlineExceeded, as a
// Lambda's context does.
type nearingDeadline struct {
	context.Context
	mu   sync.Mutex
	at   time.Time
	done chan struct{}
	err  error
}

func newNearingDeadline() *nearingDeadline {
	return &nearingDeadline{Context: context.Background(), at: time.Now().Add(time.Hour), done: make(chan struct{})}
}

func (c *nearingDeadline) Deadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at, true
}

func (c *nearingDeadline) Done() <-chan struct{} { return c.done }

func (c *nearingDeadline) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// near brings the deadline to d from now.
func (c *nearingDeadline) near(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = time.Now().Add(d)
}

// pass makes the deadline pass now.
func (c *nearingDeadline) pass() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.at, c.err = time.Now(), context.DeadlineExceeded
		close(c.done)
	}
}

// checkWrittenOnce fails t unless every policy: key landed exactly once
// over the runs, and every queue: key at most once a run (more than once
// only for a name whose announcement landed but whose entry the deadline
// left: the next run announces it again before it publishes).
func checkWrittenOnce(t *testing.T, landings map[string][]bulkReq, n, runs int) {
	t.Helper()
	policies := 0
	for key, reqs := range landings {
		switch {
		case strings.HasPrefix(key, registry.PolicyPrefix):
			policies++
			if len(reqs) != 1 {
				t.Errorf("%s written %d times, want once", key, len(reqs))
			}
		case strings.HasPrefix(key, registry.QueuePrefix) && len(reqs) > runs:
			t.Errorf("%s written %d times", key, len(reqs))
		}
	}
	if policies != n {
		t.Errorf("%d policies written, want %d", policies, n)
	}
}

// TestDeadline_Near_StopsApplyingPartialNamingWhatWaits_NextRunWritesEachOnce:
// a run whose deadline comes near (less than StopBefore away) sends no more
// writes, records itself partial naming what waits (no failure, no retry
// count, lastCommit kept), and the next run, full, writes only what did not
// land: each policy entry is written once over both runs.
func TestDeadline_Near_StopsApplyingPartialNamingWhatWaits_NextRunWritesEachOnce(t *testing.T) {
	t.Parallel()
	const n = 30
	r := newCFRig(t, n, nil)
	ctx := newNearingDeadline()
	r.bulk.before = func(k int) {
		// the lease, then 2 batches of 5 announcements: the deadline comes
		// near (with one slot, the fourth request would publish the first
		// batch's entries: puts.go)
		if k == 3 {
			ctx.near(time.Second)
		}
	}
	opt := syncer.Options{BatchSize: 5, Concurrency: 1}
	res, err := r.run(ctx, opt)
	sum := res.Summary
	if !errors.Is(err, syncer.ErrPartial) || sum.Status != policy.RunPartial || !sum.StoppedEarly {
		t.Fatalf("err = %v, status %s, stopped early %v; want partial, stopped early", err, sum.Status, sum.StoppedEarly)
	}
	if sum.Waiting != n || len(sum.Failures) != 0 || sum.Added != 0 {
		t.Errorf("waiting %d, failures %d, added %d: want all %d waiting (none published), none failed", sum.Waiting, len(sum.Failures), sum.Added, n)
	}
	if len(sum.WaitingNames) != 20 || !slices.IsSorted(sum.WaitingNames) || !strings.Contains(err.Error(), sum.WaitingNames[0]) {
		t.Errorf("waiting names %q (err %v): want the first 20, sorted, in the error", sum.WaitingNames, err)
	}
	if _, _, ok := r.cf.Value(registry.LastCommitKey); ok {
		t.Error("lastCommit advanced past changes that wait")
	}
	for _, k := range r.cf.Keys() {
		if v, _, _ := r.cf.Value(k); strings.HasPrefix(k, registry.QueuePrefix) && strings.Contains(string(v), `"retryCount":1`) {
			t.Errorf("%s counts a failure: running out of time is no item's fault", k)
		}
	}
	res, err = r.run(context.Background(), opt)
	if err != nil || res.Summary.Mode != differ.ModeFull || res.Summary.Added != n {
		t.Fatalf("the next run: %v, mode %s (%s), %d added", err, res.Summary.Mode, res.Summary.ModeReason, res.Summary.Added)
	}
	checkWrittenOnce(t, r.bulk.landings(), n, 2)
	checkAnnouncedFirst(t, r.bulk.landings())
}

// TestDeadline_PassesMidPublish_WhatLandedIsNotWrittenAgain: the deadline
// passes as a publish batch is answered; the run still records itself (partial,
// what waits named), and over three runs — the second cut the same way —
// every policy entry is written once.
func TestDeadline_PassesMidPublish_WhatLandedIsNotWrittenAgain(t *testing.T) {
	t.Parallel()
	const n = 30
	r := newCFRig(t, n, nil)
	// One batch in flight at a time, so that the recorder knows what landed
	// (a request the deadline cuts may land unseen by its client).
	opt := syncer.Options{BatchSize: 5, Concurrency: 1}
	// Each run's bulk writes: the lease, the announce batches, then the
	// publish batches; the deadline passes as the cut-th is answered. Run 1
	// publishes 2 batches after its 6 announcements (10 policies), run 2 1
	// after its 4 (5 more).
	for run, cut := range []int{9, 6} {
		ctx := newNearingDeadline()
		from := r.bulk.count()
		r.bulk.after = func(k int) {
			if k == from+cut {
				ctx.pass()
			}
		}
		res, err := r.run(ctx, opt)
		if !errors.Is(err, syncer.ErrPartial) || !res.Summary.StoppedEarly || res.Summary.Waiting == 0 {
			t.Fatalf("run %d: err = %v, summary %+v; want partial with changes waiting", run+1, err, res.Summary)
		}
		if lr := r.lastRun(); lr.Status != policy.RunPartial || lr.Waiting != res.Summary.Waiting || !lr.StoppedEarly {
			t.Fatalf("run %d recorded %s, %d waiting", run+1, lr.Status, lr.Waiting)
		}
		r.bulk.after = nil
	}
	res, err := r.run(context.Background(), opt)
	if err != nil || res.Summary.Waiting != 0 {
		t.Fatalf("the last run: %v, %+v", err, res.Summary)
	}
	checkWrittenOnce(t, r.bulk.landings(), n, 3)
	checkAnnouncedFirst(t, r.bulk.landings())
}
