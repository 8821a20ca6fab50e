package registry_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/registrytest"
)

func TestLease_TakeRefuseRenewReleaseBreak(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, r *registry.Registry, clock *registrytest.Clock) {
		ctx := t.Context()
		read := func() *registry.Lease {
			t.Helper()
			l, err := r.Lease(ctx)
			if err != nil {
				t.Fatalf("read lease: %v", err)
			}
			return l
		}
		if l := read(); l != nil {
			t.Fatalf("empty registry: lease %+v", l)
		}
		a, err := r.TakeLease(ctx, nil, "run-a", clock.Now(), 3*time.Minute)
		if err != nil {
			t.Fatalf("take: %v", err)
		}
		if l := read(); l == nil || *l != a || !l.Holds(clock.Now()) || l.Released() {
			t.Fatalf("held lease: %+v, took %+v", l, a)
		}
		_, err = r.TakeLease(ctx, read(), "run-b", clock.Now(), 3*time.Minute)
		var held *registry.LeaseHeldError
		if !errors.Is(err, registry.ErrLeaseHeld) || !errors.As(err, &held) || held.Held.Owner != "run-a" || !strings.Contains(err.Error(), "run-a") {
			t.Fatalf("second owner: %v, want ErrLeaseHeld naming run-a", err)
		}
		if _, err := r.TakeLease(ctx, read(), "run-a", clock.Now(), 3*time.Minute); err != nil {
			t.Fatalf("the same owner takes it again: %v", err)
		}
		clock.Advance(2 * time.Minute)
		renewed, err := r.RenewLease(ctx, a, clock.Now(), 3*time.Minute)
		if err != nil || renewed.AcquiredAt != a.AcquiredAt {
			t.Fatalf("renew: %+v, %v (acquiredAt must stay %s)", renewed, err, a.AcquiredAt)
		}
		clock.Advance(2 * time.Minute) // 4 minutes after taking, 2 after renewing
		if _, err := r.TakeLease(ctx, read(), "run-b", clock.Now(), 3*time.Minute); !errors.Is(err, registry.ErrLeaseHeld) {
			t.Fatalf("a renewed lease still holds: %v", err)
		}
		if err := r.ReleaseLease(ctx, renewed, clock.Now()); err != nil {
			t.Fatalf("release: %v", err)
		}
		if l := read(); l == nil || !l.Released() || l.Holds(clock.Now()) {
			t.Fatalf("released lease: %+v", l)
		}
		if _, err := r.TakeLease(ctx, read(), "run-b", clock.Now(), 3*time.Minute); err != nil {
			t.Fatalf("take after release: %v", err)
		}
		b := read()
		if err := r.BreakLease(ctx, *b, clock.Now()); err != nil {
			t.Fatalf("break: %v", err)
		}
		if l := read(); l == nil || l.Holds(clock.Now()) || l.Released() || l.Owner != "run-b" {
			t.Fatalf("after break: %+v; want it ended but not released (the evidence stays)", l)
		}
	})
}

func TestLease_LeftBehind_ExpiresButStaysAsEvidence(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, r *registry.Registry, clock *registrytest.Clock) {
		ctx := t.Context()
		if _, err := r.TakeLease(ctx, nil, "crashed", clock.Now(), time.Minute); err != nil {
			t.Fatal(err)
		}
		clock.Advance(24 * time.Hour)
		l, err := r.Lease(ctx)
		if err != nil || l == nil || l.Released() || l.Holds(clock.Now()) {
			t.Fatalf("a day later the crashed run's lease is expired but still there, unreleased: %+v, %v", l, err)
		}
		if _, err := r.TakeLease(ctx, l, "next", clock.Now(), time.Minute); err != nil {
			t.Fatalf("an expired lease is taken over: %v", err)
		}
		if errs := registry.StoreOf(r).Put(ctx, []registry.Pair{{Key: registry.LeaseKey, Value: []byte("garbage")}}); errs != nil {
			t.Fatal(errs)
		}
		var bad *registry.DecodeError
		if _, err := r.Lease(ctx); !errors.As(err, &bad) {
			t.Fatalf("an unreadable lease: %v, want a DecodeError", err)
		}
	})
}

func TestRecordCost_BillsHistoryLastRunWithAndAdvance(t *testing.T) {
	t.Parallel()
	clock := registrytest.NewClock(registrytest.Epoch)
	if got := registry.New(registry.NewMemory(clock.Now)).RecordCost("sha", registry.LeaseRelease(registry.Lease{Owner: "x"}, clock.Now())); got != 0 {
		t.Errorf("memory bills nothing, got %d", got)
	}
	billing := registry.New(billingStore{registry.NewMemory(clock.Now)})
	if got := billing.RecordCost("", registry.LeaseRelease(registry.Lease{Owner: "x"}, clock.Now())); got != 3 {
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
