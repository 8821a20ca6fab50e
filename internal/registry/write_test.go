package registry_test

import (
	"errors"
	"testing"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/registrytest"
)

func TestWrite_PutsAndDeletesByKind_FailuresByKey(t *testing.T) {
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
		if n, err := r.CountPolicies(ctx); err != nil || n != 1 {
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
