package syncer_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/mirror/mirrortest"
)

// TestBudget_MirrorFill_RepairWritesFitTheDailyBudget: a content mirror
// turned on for a registry of 20 policies: the fill (a full run, head
// unchanged) uploads every object and rewrites each policy's entry to
// record its ETag (repairedEntries). Under DAILY_WRITE_BUDGET=15 it bills
// no more than 15 writes: the repairs that do not fit wait for another
// day, the run partial; the next day's runs finish the fill. (An
// adversarial helper found those writes outside the budget: 26 billed.)
func TestBudget_MirrorFill_RepairWritesFitTheDailyBudget(t *testing.T) {
	t.Parallel()
	r, b := syncedBeforeTheMirror(t, 20)
	before := b.writes.Load()
	r.withMirror(mirrortest.NewMemory(prefix))
	const budget = 15
	res, err := r.run(withBudget(budget))
	spent := b.writes.Load() - before
	t.Logf("fill: %v; status %s, mode %s (%s), mirror %+v, billed %d, history counts %d", err, res.Summary.Status, res.Summary.Mode, res.Summary.ModeReason, res.Summary.Mirror, spent, r.recordedToday())
	if spent > budget {
		t.Errorf("the fill billed %d writes today; DAILY_WRITE_BUDGET is %d", spent, budget)
	}
	if res.Summary.Status != "partial" || res.Summary.Waiting == 0 || res.Summary.Mirror.Converged != "" {
		t.Fatalf("the first day of the fill: status %s, waiting %d, converged %q; want partial, repairs waiting, not converged", res.Summary.Status, res.Summary.Waiting, res.Summary.Mirror.Converged)
	}
	for day := 2; ; day++ {
		r.clock.Advance(24 * time.Hour)
		before := b.writes.Load()
		res, err := r.run(withBudget(budget))
		if spent := b.writes.Load() - before; spent > budget {
			t.Errorf("day %d billed %d writes; DAILY_WRITE_BUDGET is %d", day, spent, budget)
		}
		if err == nil && res.Summary.Mirror.Converged != "" {
			break
		}
		if day == 6 {
			t.Fatalf("the fill has not converged by day %d: %v, mirror %+v", day, err, res.Summary.Mirror)
		}
	}
	for name, e := range r.policies() {
		if e.ContentETag == "" {
			t.Errorf("%s: no contentEtag recorded after the fill", name)
		}
	}
}

// TestBudget_MirrorFill_KilledAfterRepairWrites_HistoryCountsThem: a
// budgeted fill killed after some of its writes leaves a day's history
// counting at least what the store billed: the reservation it records
// before it applies includes the repairs' entries ("a kill cannot lose the
// count"; the helper found 23 counted of 103 billed).
func TestBudget_MirrorFill_KilledAfterRepairWrites_HistoryCountsThem(t *testing.T) {
	t.Parallel()
	for _, at := range []int{2, 3, 4} {
		t.Run(fmt.Sprint(at), func(t *testing.T) {
			t.Parallel()
			r, b := syncedBeforeTheMirror(t, 100)
			before := b.writes.Load()
			r.withMirror(mirrortest.NewMemory(prefix))
			r.store.Kill(at)
			_, err := r.run(withBudget(1000))
			r.store.Revive()
			billed, rec := b.writes.Load()-before, r.recordedToday()
			t.Logf("killed after %d write calls: %v; billed %d, history counts %d", at, err, billed, rec)
			if rec < billed {
				t.Errorf("a killed fill billed %d writes; the day's history counts %d", billed, rec)
			}
		})
	}
}

// syncedBeforeTheMirror is a billed rig of n policies synced without a
// mirror, its clock a day later (the next UTC day's budget).
func syncedBeforeTheMirror(t *testing.T, n int) (*rig, *billingStore) {
	t.Helper()
	r := newRig(t)
	b := r.billed()
	for i := range n {
		r.repo.Write(fmt.Sprintf("p/규정 %02d.md", i), fmt.Sprintf("# 규정 %d\n", i))
	}
	r.repo.Commit(fmt.Sprintf("%d policies", n))
	if _, err := r.run(withBudget(1000)); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(24 * time.Hour)
	return r, b
}
