package queue_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/queue"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/registrytest"
)

// seeded returns a registry holding two policies, each with its queue entry.
func seeded(clock *registrytest.Clock) (*registry.Registry, error) {
	reg := registry.New(registry.NewMemory(clock.Now))
	now := clock.Now().Format(time.RFC3339)
	errs := reg.Store().Put(context.Background(), []registry.Pair{
		registry.PolicyPair(policy.Entry{PolicyName: "학칙", Title: "학칙", Status: "active", SHA: "a1", Path: "학칙.md", LastUpdated: now}),
		registry.QueuePair(policy.QueueEntry{PolicyName: "학칙", SHA: "a1", Operation: policy.OpUpdate, CreatedAt: "2026-11-25T16:00:00Z"}),
		registry.PolicyPair(policy.Entry{PolicyName: "규정", Title: "규정", Status: "active", SHA: "b1", Path: "규정.md", LastUpdated: now}),
		registry.QueuePair(policy.QueueEntry{PolicyName: "규정", SHA: "b1", Operation: policy.OpAdd, CreatedAt: "2026-11-25T15:00:00Z"}),
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("seed: %v", errs)
	}
	return reg, nil
}

func newRegistry(t testing.TB, clock *registrytest.Clock) *registry.Registry {
	t.Helper()
	reg, err := seeded(clock)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// A re-indexing worker takes what is ready, acknowledges what it indexed and
// fails what it could not; the third failure of an entry makes it a dead
// letter for a person to look at ("syncjob deadletter list").
func ExampleConsumer() {
	ctx := context.Background()
	reg, err := seeded(registrytest.NewClock(registrytest.Epoch))
	if err != nil {
		panic(err)
	}
	c := &queue.Consumer{Registry: reg}
	entries, _ := c.Take(ctx, 10)
	for _, e := range entries {
		if e.PolicyName == "학칙" {
			dead, _ := c.Fail(ctx, e, errors.New("search index unavailable"))
			fmt.Println(e.PolicyName, "failed, dead letter:", dead)
			continue
		}
		_ = c.Ack(ctx, e)
		fmt.Println(e.PolicyName, e.Operation, "indexed")
	}
	// Output:
	// 규정 add indexed
	// 학칙 failed, dead letter: false
}

func TestConsumer_TakeOldestFirst_AckRemoves(t *testing.T) {
	ctx := context.Background()
	reg := newRegistry(t, registrytest.NewClock(registrytest.Epoch))
	c := &queue.Consumer{Registry: reg}
	got, err := c.Take(ctx, 0)
	if err != nil || len(got) != 2 || got[0].PolicyName != "규정" {
		t.Fatalf("take = %+v, %v; want 규정 (older) first", got, err)
	}
	if err := c.Ack(ctx, got[0]); err != nil {
		t.Fatal(err)
	}
	if err := c.Ack(ctx, got[0]); !errors.Is(err, queue.ErrStale) {
		t.Errorf("second ack: %v, want ErrStale", err)
	}
	if left, _ := c.Take(ctx, 0); len(left) != 1 || left[0].PolicyName != "학칙" {
		t.Errorf("after ack: %+v", left)
	}
}

func TestConsumer_AckKeepsNewerVersion(t *testing.T) {
	ctx := context.Background()
	reg := newRegistry(t, registrytest.NewClock(registrytest.Epoch))
	c := &queue.Consumer{Registry: reg}
	got, _ := c.Take(ctx, 0)
	// The sync queues a newer version of 학칙 while the worker holds the old.
	newer := policy.QueueEntry{PolicyName: "학칙", SHA: "a2", Operation: policy.OpUpdate, CreatedAt: "2026-11-26T16:00:00Z"}
	if errs := reg.Store().Put(ctx, []registry.Pair{registry.QueuePair(newer)}); len(errs) > 0 {
		t.Fatal(errs)
	}
	if err := c.Ack(ctx, got[1]); !errors.Is(err, queue.ErrStale) {
		t.Errorf("ack of a replaced version: %v, want ErrStale", err)
	}
	q, _ := reg.Queue(ctx)
	if q["학칙"].SHA != "a2" {
		t.Errorf("newer version lost: %+v", q["학칙"])
	}
}

func TestConsumer_ThirdFailure_DeadLetter(t *testing.T) {
	ctx := context.Background()
	clock := registrytest.NewClock(registrytest.Epoch)
	reg := newRegistry(t, clock)
	c := &queue.Consumer{Registry: reg, Now: clock.Now}
	for i := 1; i <= 3; i++ {
		got, err := c.Take(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		var e policy.QueueEntry
		for _, g := range got {
			if g.PolicyName == "학칙" {
				e = g
			}
		}
		if e.PolicyName == "" {
			t.Fatalf("attempt %d: 학칙 not ready (a worker's failure must stay takeable)", i)
		}
		dead, err := c.Fail(ctx, e, fmt.Errorf("attempt %d failed", i))
		if err != nil || dead != (i == 3) {
			t.Fatalf("attempt %d: dead %v, err %v", i, dead, err)
		}
	}
	q, _ := reg.Queue(ctx)
	if _, ok := q["학칙"]; ok {
		t.Error("dead entry still queued")
	}
	d, _ := reg.DeadLetters(ctx)
	if dl := d["학칙"]; dl.RetryCount != 3 || dl.Reason != "attempt 3 failed" || dl.DeadAt == "" {
		t.Errorf("dead letter = %+v", dl)
	}
}

func TestConsumer_SyncPendingEntriesNotTaken(t *testing.T) {
	ctx := context.Background()
	reg := newRegistry(t, registrytest.NewClock(registrytest.Epoch))
	msg := "kv write failed"
	pending := policy.QueueEntry{PolicyName: "학칙", SHA: "a9", Operation: policy.OpUpdate, CreatedAt: "2026-11-25T17:00:00Z", RetryCount: 1, ErrorMessage: &msg}
	if errs := reg.Store().Put(ctx, []registry.Pair{registry.QueuePair(pending)}); len(errs) > 0 {
		t.Fatal(errs)
	}
	got, _ := (&queue.Consumer{Registry: reg}).Take(ctx, 0)
	if len(got) != 1 || got[0].PolicyName != "규정" {
		t.Errorf("take = %+v; an entry the sync still owes must not be taken", got)
	}
}

func TestRules_FailedCountsAndRequeue(t *testing.T) {
	now := registrytest.Epoch
	q := policy.QueueEntry{PolicyName: "x", SHA: "s", Operation: policy.OpAdd}
	q, dead := queue.Failed(q, "one", now)
	if dead != nil || q.RetryCount != 1 || *q.ErrorMessage != "one" || q.CreatedAt == "" {
		t.Fatalf("first failure: %+v %+v", q, dead)
	}
	q, _ = queue.Failed(q, "two", now)
	_, dead = queue.Failed(q, "three", now)
	if dead == nil || dead.Reason != "three" || dead.RetryCount != 3 {
		t.Fatalf("third failure: %+v", dead)
	}
	back := queue.Requeue(*dead, now)
	if back.RetryCount != 0 || back.ErrorMessage == nil || back.SHA != "s" {
		t.Errorf("requeue = %+v", back)
	}
	if !queue.SyncPending(back, policy.Entry{}, false) || queue.SyncPending(back, policy.Entry{SHA: "s"}, true) {
		t.Error("SyncPending: pending while the registry lacks the version, not once it holds it")
	}
}

func TestDeadLetter_RetryRequeuesDropForgets(t *testing.T) {
	ctx := t.Context()
	clock := registrytest.NewClock(registrytest.Epoch)
	reg := newRegistry(t, clock)
	c := &queue.Consumer{Registry: reg, Now: clock.Now}
	entries, _ := c.Take(ctx, 0)
	for _, e := range entries {
		for i := 0; i < queue.MaxFailures; i++ {
			cur, err := reg.QueueEntry(ctx, e.PolicyName)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Fail(ctx, cur, errors.New("index down")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if d, _ := reg.DeadLetters(ctx); len(d) != 2 {
		t.Fatalf("dead letters = %v, want both", d)
	}
	if err := queue.RetryDeadLetter(ctx, reg, "학칙", clock.Now()); err != nil {
		t.Fatalf("retry: %v", err)
	}
	back, err := reg.QueueEntry(ctx, "학칙")
	if err != nil || back.RetryCount != 0 || back.ErrorMessage == nil {
		t.Fatalf("requeued entry = %+v, %v", back, err)
	}
	if err := queue.DropDeadLetter(ctx, reg, "규정"); err != nil {
		t.Fatalf("drop: %v", err)
	}
	if d, _ := reg.DeadLetters(ctx); len(d) != 0 {
		t.Fatalf("dead letters after retry and drop = %v", d)
	}
	if err := queue.RetryDeadLetter(ctx, reg, "없음", clock.Now()); !errors.Is(err, policy.ErrNotFound) {
		t.Fatalf("retry of a missing dead letter: %v", err)
	}
}
