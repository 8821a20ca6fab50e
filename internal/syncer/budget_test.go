package syncer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/syncer"
)

// billed puts the rig's registry on a store that counts writes as
// Cloudflare bills them, and returns it.
func (r *rig) billed() *billingStore {
	b := &billingStore{Store: r.store}
	r.s.Registry = registry.New(b)
	r.reg = r.s.Registry
	return b
}

// recordedToday is the day's billable writes as the next run counts them:
// the run history's listing, today's (UTC) runs.
func (r *rig) recordedToday() int64 {
	r.t.Helper()
	refs, err := r.reg.RunIndex(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	y, m, d := r.clock.Now().UTC().Date()
	day := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	var n int64
	for _, ref := range refs {
		if !ref.At.Before(day) {
			n += ref.BillableWrites
		}
	}
	return n
}

// withBudget is a leased run under a daily write budget.
func withBudget(n int64) syncer.Options {
	o := leased
	o.DailyWriteBudget = n
	return o
}

// A run killed before it records its end still counts: the day's
// history adds up to at least what the store billed.
func TestBudget_KilledMidApply_NextRunCountsItsWrites(t *testing.T) {
	t.Parallel()
	for _, at := range []int{1, 2, 3, 4, 5} {
		t.Run(fmt.Sprintf("killed after %d writes", at), func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			b := r.billed()
			r.seed()
			// enough for both runs, counted as the next run counts them
			const budget = 60
			r.store.Kill(at)
			_, _ = r.run(withBudget(budget))
			r.store.Revive()
			killed := b.writes.Load()
			r.clock.Advance(leased.LeaseTTL) // the same UTC day
			_, err := r.run(withBudget(budget))
			if err != nil {
				t.Fatalf("next run: %v", err)
			}
			if got, rec := b.writes.Load(), r.recordedToday(); got > budget || rec < got {
				t.Errorf("the day billed %d writes (%d by the killed run), the history counts %d; budget %d", got, killed, rec, budget)
			}
		})
	}
}

// Refused runs: a guard refusal and a lease refusal count what they wrote;
// a budget refusal writes nothing.
func TestBudget_RefusedRuns_CountTheirWrites(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	b := r.billed()
	for i := 0; i < 20; i++ {
		r.repo.Write(fmt.Sprintf("p/규정 %02d.md", i), fmt.Sprintf("# 규정 %d\n", i))
	}
	r.repo.Commit("20 policies")
	if _, err := r.run(withBudget(1000)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 15; i++ {
		r.repo.Remove(fmt.Sprintf("p/규정 %02d.md", i))
	}
	r.repo.Commit("repeal 15")
	if _, err := r.run(withBudget(1000)); !errors.Is(err, differ.ErrRefused) {
		t.Fatalf("guard: %v", err)
	}
	if got, rec := b.writes.Load(), r.recordedToday(); rec != got {
		t.Errorf("after a guard refusal: billed %d, history counts %d", got, rec)
	}
	// A budget that cannot pay for the run's own record: refused before it
	// writes anything, so the day's count stays true.
	spent := b.writes.Load()
	opt := withBudget(spent + 6)
	opt.AllowDeletes = 15
	if _, err := r.run(opt); !errors.Is(err, syncer.ErrBudget) {
		t.Fatalf("budget: %v", err)
	}
	if got, rec := b.writes.Load(), r.recordedToday(); got != spent || rec != got {
		t.Errorf("after a budget refusal: billed %d (was %d), history counts %d", got, spent, rec)
	}
	// Another run holding the lease: the refused run's history key is counted.
	holder := r.s.Registry
	if _, err := holder.TakeLease(context.Background(), nil, "another run", r.clock.Now(), time.Hour); err != nil {
		t.Fatal(err)
	}
	billed, recorded := b.writes.Load(), r.recordedToday() // the other run's lease is its own to count
	if _, err := r.run(withBudget(1000)); !errors.Is(err, registry.ErrLeaseHeld) {
		t.Fatalf("lease held: %v", err)
	}
	if got, rec := b.writes.Load()-billed, r.recordedToday()-recorded; got != 1 || rec != got {
		t.Errorf("a lease refusal billed %d, its history counts %d; want its history key, 1", got, rec)
	}
}
