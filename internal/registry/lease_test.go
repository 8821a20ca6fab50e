package registry_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/registrytest"
)

func TestLease_TakeRefuseExpireReleaseBreak(t *testing.T) {
	forEachBackend(t, func(t *testing.T, r *registry.Registry, clock *registrytest.Clock) {
		ctx := t.Context()
		if l, err := r.Lease(ctx); l != nil || err != nil {
			t.Fatalf("empty registry: lease %+v, %v", l, err)
		}
		if err := r.TakeLease(ctx, "run-a", clock.Now(), 6*time.Minute); err != nil {
			t.Fatalf("take: %v", err)
		}
		l, err := r.Lease(ctx)
		if err != nil || l == nil || l.Owner != "run-a" || l.Expired(clock.Now()) {
			t.Fatalf("held lease: %+v, %v", l, err)
		}
		err = r.TakeLease(ctx, "run-b", clock.Now(), 6*time.Minute)
		var held *registry.LeaseHeldError
		if !errors.Is(err, registry.ErrLeaseHeld) || !errors.As(err, &held) || held.Held.Owner != "run-a" || !strings.Contains(err.Error(), "run-a") {
			t.Fatalf("second owner: %v, want ErrLeaseHeld naming run-a", err)
		}
		if err := r.TakeLease(ctx, "run-a", clock.Now(), 6*time.Minute); err != nil {
			t.Fatalf("the same owner takes it again: %v", err)
		}
		clock.Advance(3 * time.Minute)
		if err := r.RenewLease(ctx, "run-a", clock.Now(), 6*time.Minute); err != nil {
			t.Fatalf("renew: %v", err)
		}
		clock.Advance(4 * time.Minute) // 7 minutes after taking, 4 after renewing
		if err := r.TakeLease(ctx, "run-b", clock.Now(), 6*time.Minute); !errors.Is(err, registry.ErrLeaseHeld) {
			t.Fatalf("a renewed lease still holds: %v", err)
		}
		if err := r.ReleaseLease(ctx, "run-a", clock.Now()); err != nil {
			t.Fatalf("release: %v", err)
		}
		if err := r.TakeLease(ctx, "run-b", clock.Now(), 6*time.Minute); err != nil {
			t.Fatalf("take after release: %v", err)
		}
		if err := r.BreakLease(ctx); err != nil {
			t.Fatalf("break: %v", err)
		}
		if l, err := r.Lease(ctx); l != nil || err != nil {
			t.Fatalf("after break: %+v, %v", l, err)
		}
	})
}

func TestLease_ExpiredOrUnreadable_TakenOver(t *testing.T) {
	forEachBackend(t, func(t *testing.T, r *registry.Registry, clock *registrytest.Clock) {
		ctx := t.Context()
		if err := r.TakeLease(ctx, "crashed", clock.Now(), time.Minute); err != nil {
			t.Fatal(err)
		}
		clock.Advance(61 * time.Second)
		if err := r.TakeLease(ctx, "next", clock.Now(), time.Minute); err != nil {
			t.Fatalf("an expired lease is taken over: %v", err)
		}
		if errs := r.Store().Put(ctx, []registry.Pair{{Key: policy.LeaseKey, Value: []byte("garbage")}}); errs != nil {
			t.Fatal(errs)
		}
		if err := r.TakeLease(ctx, "next", clock.Now(), time.Minute); err != nil {
			t.Fatalf("an unreadable lease is taken over: %v", err)
		}
	})
}

func TestRecordCost_BillsHistoryLastRunWithAndAdvance(t *testing.T) {
	clock := registrytest.NewClock(registrytest.Epoch)
	if got := registry.New(registry.NewMemory(clock.Now)).RecordCost("sha", registry.LeaseRelease("x", clock.Now())); got != 0 {
		t.Errorf("memory bills nothing, got %d", got)
	}
	billing := registry.New(billingStore{registry.NewMemory(clock.Now)})
	if got := billing.RecordCost("", registry.LeaseRelease("x", clock.Now())); got != 3 {
		t.Errorf("history, lastRun and the lease: got %d, want 3", got)
	}
	if got := billing.RecordCost("sha"); got != 3 {
		t.Errorf("history, lastRun and lastCommit: got %d, want 3", got)
	}
}

// billingStore is a store that says it bills per write.
type billingStore struct{ registry.Store }

func (b billingStore) Usage() registry.Usage {
	u := b.Store.Usage()
	u.Billing = true
	return u
}
