package registry_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/registrytest"
)

func TestWrite_PutsAndDeletesByKind_FailuresByKey(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, r *registry.Registry, clock *registrytest.Clock) {
		ctx := t.Context()
		e := policy.Entry{PolicyName: "학칙", Title: "학칙", Status: policy.StatusActive, SHA: "a1", Path: "학칙.md", LastUpdated: "2026-11-25T16:00:00Z"}
		q := policy.QueueEntry{PolicyName: "학칙", SHA: "a1", Operation: policy.OpAdd, CreatedAt: "2026-11-25T16:00:00Z"}
		d := policy.DeadLetter{QueueEntry: q, DeadAt: "2026-11-25T16:00:00Z", Reason: "boom"}
		if errs := r.Write(ctx, registry.PutPolicy(e), registry.PutQueue(q), registry.PutDeadLetter(d)); errs != nil {
			t.Fatalf("put: %v", errs)
		}
		if got, err := r.QueueEntry(ctx, "학칙"); err != nil || got.SHA != "a1" {
			t.Fatalf("queue entry: %+v, %v", got, err)
		}
		if got, err := r.DeadLetter(ctx, "학칙"); err != nil || got.Reason != "boom" {
			t.Fatalf("dead letter: %+v, %v", got, err)
		}
		if n, _, err := r.CountPolicies(ctx); err != nil || n != 1 {
			t.Fatalf("count: %d, %v", n, err)
		}
		del := []registry.Write{registry.DeletePolicy("학칙"), registry.DeleteQueue("학칙"), registry.DeleteDeadLetter("학칙")}
		for _, w := range del {
			if !w.IsDelete() {
				t.Errorf("%s is not a delete", w.Key())
			}
		}
		if errs := r.Write(ctx, del...); errs != nil {
			t.Fatalf("delete: %v", errs)
		}
		if _, err := r.QueueEntry(ctx, "학칙"); !errors.Is(err, policy.ErrNotFound) {
			t.Fatalf("deleted queue entry: %v", err)
		}
		if _, err := r.DeadLetter(ctx, "학칙"); !errors.Is(err, policy.ErrNotFound) {
			t.Fatalf("deleted dead letter: %v", err)
		}
		long := string(make([]byte, 600))
		if errs := r.Write(ctx, registry.PutQueue(policy.QueueEntry{PolicyName: long}), registry.PutQueue(q)); len(errs) != 1 || !errors.Is(errs[registry.QueueKey(long)], policy.ErrTooLarge) {
			t.Fatalf("a key over the limit fails alone: %v", errs)
		}
	})
}

func TestSyncState_ReadsLastCommitLastRunAndLease(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, r *registry.Registry, clock *registrytest.Clock) {
		ctx := t.Context()
		if st, err := r.SyncState(ctx); err != nil || st.LastCommit != "" || st.LastRun != nil || st.Lease != nil {
			t.Fatalf("empty registry: %+v, %v", st, err)
		}
		if err := r.RecordRun(ctx, policy.RunSummary{RunID: "r1", Status: policy.RunSuccess, Pending: []string{}}, clock.Now(), "abc"); err != nil {
			t.Fatal(err)
		}
		if _, err := r.TakeLease(ctx, nil, "me", clock.Now(), time.Minute); err != nil {
			t.Fatal(err)
		}
		st, err := r.SyncState(ctx)
		if err != nil || st.LastCommit != "abc" || st.LastRun == nil || st.LastRun.RunID != "r1" || st.Lease == nil || st.Lease.Owner != "me" {
			t.Fatalf("state %+v, %v", st, err)
		}
		if st.LastRun.Pending == nil {
			t.Error("an empty pending list must read back as known (non-nil)")
		}
	})
}

func TestOwedAndRequestRetry(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, r *registry.Registry, clock *registrytest.Clock) {
		ctx := t.Context()
		msg := "boom"
		var names []string
		var queued []registry.Write
		for i := 0; i < 120; i++ { // more than one bulk get
			n := fmt.Sprintf("규정 %03d", i)
			names = append(names, n)
			queued = append(queued, registry.PutQueue(policy.QueueEntry{PolicyName: n, SHA: "s", ErrorMessage: &msg}))
		}
		// one write of the 120: a write each was a bolt transaction or a
		// bulk request each, most of the test's time
		if errs := r.Write(ctx, queued...); errs != nil {
			t.Fatal(errs)
		}
		if errs := r.Write(ctx, registry.PutPolicy(policy.Entry{PolicyName: "규정 007", Status: policy.StatusActive, SHA: "old"})); errs != nil {
			t.Fatal(errs)
		}
		q, e, err := r.Owed(ctx, append(names, "없음"))
		if err != nil || len(q) != 120 || len(e) != 1 || e["규정 007"].SHA != "old" {
			t.Fatalf("owed: %d queue, %d entries, %v", len(q), len(e), err)
		}
		if err := r.RecordRun(ctx, policy.RunSummary{RunID: "r1", Pending: []string{"a"}}, clock.Now(), ""); err != nil {
			t.Fatal(err)
		}
		if err := r.RequestRetry(ctx, "b", "a"); err != nil {
			t.Fatal(err)
		}
		if last, _ := r.LastRun(ctx); last == nil || !slices.Equal(last.Pending, []string{"a", "b"}) {
			t.Errorf("pending after a retry request: %+v", last)
		}
	})
}

// Retrying several dead letters tells the next run about all of them in
// one write of lastRun: on a store whose reads lag its writes (Workers
// KV), a read-modify-write of lastRun per dead letter read the lastRun
// from before the previous one's write and kept only the last request
// (review: a run after "deadletter retry --all" retried one of them and
// said success).
func TestRetryDeadLetters_ReadsThatLag_EveryRequestKept(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := registrytest.NewClock(time.Date(2026, 11, 25, 16, 0, 0, 0, time.UTC))
	mem := registry.NewMemory(clock.Now)
	truth := registry.New(mem)
	msg := "boom"
	var writes []registry.Write
	for _, n := range []string{"가", "나", "다"} {
		writes = append(writes, registry.PutDeadLetter(policy.DeadLetter{QueueEntry: policy.QueueEntry{PolicyName: n, SHA: "s", Operation: "add", RetryCount: 3, ErrorMessage: &msg}, DeadAt: clock.Now().Format(policy.TimeLayout), Reason: "3 failed attempts"}))
	}
	if errs := truth.Write(ctx, writes...); errs != nil {
		t.Fatal(errs)
	}
	if err := truth.RecordRun(ctx, policy.RunSummary{RunID: "r1", Pending: []string{}}, clock.Now(), ""); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	lagged := registry.New(registrytest.NewLagging(mem, clock.Now, time.Minute))
	retried, err := lagged.RetryDeadLetters(ctx, []string{"가", "나", "다"}, clock.Now())
	if err != nil || len(retried) != 3 {
		t.Fatalf("RetryDeadLetters = %v, %v", retried, err)
	}
	if last, _ := truth.LastRun(ctx); last == nil || !slices.Equal(last.Pending, []string{"가", "나", "다"}) {
		t.Errorf("lastRun.pending = %+v, want all three retried", last)
	}
}
