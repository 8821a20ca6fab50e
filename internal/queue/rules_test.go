package queue_test

import (
	"errors"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/queue"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/registrytest"
)

// newRegistry returns a registry holding two policies, each with its queue
// entry.
func newRegistry(t testing.TB, clock *registrytest.Clock) *registry.Registry {
	t.Helper()
	reg := registry.New(registry.NewMemory(clock.Now))
	now := clock.Now().Format(time.RFC3339)
	mustWrite(t, reg,
		registry.PutPolicy(policy.Entry{PolicyName: "학칙", Title: "학칙", Status: "active", SHA: "a1", Path: "학칙.md", LastUpdated: now}),
		registry.PutQueue(policy.QueueEntry{PolicyName: "학칙", SHA: "a1", Operation: policy.OpUpdate, CreatedAt: "2026-11-25T16:00:00Z"}),
		registry.PutPolicy(policy.Entry{PolicyName: "규정", Title: "규정", Status: "active", SHA: "b1", Path: "규정.md", LastUpdated: now}),
		registry.PutQueue(policy.QueueEntry{PolicyName: "규정", SHA: "b1", Operation: policy.OpAdd, CreatedAt: "2026-11-25T15:00:00Z"}),
	)
	return reg
}

func mustWrite(t testing.TB, reg *registry.Registry, ws ...registry.Write) {
	t.Helper()
	if errs := reg.Write(t.Context(), ws...); len(errs) > 0 {
		t.Fatalf("write: %v", errs)
	}
}

func TestRules_FailedCountsAndRequeue(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	ctx := t.Context()
	clock := registrytest.NewClock(registrytest.Epoch)
	reg := newRegistry(t, clock)
	queued, err := reg.Queue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name := range queued {
		// a worker fails the entry MaxFailures times, under the queue's rules
		for i := 0; i < queue.MaxFailures; i++ {
			cur, err := reg.QueueEntry(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			next, dl := queue.Failed(cur, "index down", clock.Now())
			if dl == nil {
				mustWrite(t, reg, registry.PutQueue(next))
				continue
			}
			mustWrite(t, reg, registry.PutDeadLetter(*dl), registry.DeleteQueue(name))
		}
	}
	if d, _ := reg.DeadLetters(ctx); len(d) != 2 {
		t.Fatalf("dead letters = %v, want both", d)
	}
	if err := reg.RetryDeadLetter(ctx, "학칙", clock.Now()); err != nil {
		t.Fatalf("retry: %v", err)
	}
	back, err := reg.QueueEntry(ctx, "학칙")
	if err != nil || back.RetryCount != 0 || back.ErrorMessage == nil {
		t.Fatalf("requeued entry = %+v, %v", back, err)
	}
	if err := reg.DropDeadLetter(ctx, "규정"); err != nil {
		t.Fatalf("drop: %v", err)
	}
	if d, _ := reg.DeadLetters(ctx); len(d) != 0 {
		t.Fatalf("dead letters after retry and drop = %v", d)
	}
	if err := reg.RetryDeadLetter(ctx, "없음", clock.Now()); !errors.Is(err, policy.ErrNotFound) {
		t.Fatalf("retry of a missing dead letter: %v", err)
	}
}
