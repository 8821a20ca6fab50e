package syncer_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/mirror/mirrortest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/syncer"
)

// mirroredCFRig is windowedRig (or a plain cfRig of n policies) with a
// content mirror in memory.
func mirroredCFRig(t *testing.T, n int, conflicts bool) (*cfRig, *mirrortest.Memory) {
	t.Helper()
	r := newCFRig(t, n, nil)
	if conflicts {
		r = windowedRig(t, n)
	}
	m := mirrortest.NewMemory(prefix)
	r.s.Mirror, r.s.MirrorPrefix = m, prefix
	return r, m
}

// mirrorBodies is what m holds, key → body.
func mirrorBodies(m *mirrortest.Memory) map[string]string {
	out := map[string]string{}
	for k, o := range m.Objects() {
		out[k] = string(o.Body)
	}
	return out
}

// TestWindows_Mirror_FirstSync_SameRegistryMirrorAndSummaryAsWhole: a
// first sync with a content mirror whose prefix holds nothing but a
// folder marker takes windows (a quarter of FirstSyncWindow each), lists
// the prefix once, and leaves the registry (every contentEtag), the
// mirror's objects and the record (the mirror's counts: uploaded,
// objects, converged) as a whole first sync leaves them; the next run is
// incremental.
func TestWindows_Mirror_FirstSync_SameRegistryMirrorAndSummaryAsWhole(t *testing.T) {
	t.Parallel()
	const n = 150
	whole, wholeMirror := mirroredCFRig(t, n, true)
	windowed, windowedMirror := mirroredCFRig(t, n, true)
	for _, m := range []*mirrortest.Memory{wholeMirror, windowedMirror} {
		m.PutRaw(t, prefix, nil) // a folder marker, made by hand
	}
	wantRes, err := whole.run(t.Context(), syncer.Options{BatchSize: 20, FirstSyncWindow: 8 * n})
	if err != nil {
		t.Fatalf("whole: %v", err)
	}
	res, err := windowed.run(t.Context(), syncer.Options{BatchSize: 20, FirstSyncWindow: 160})
	if err != nil {
		t.Fatalf("windowed: %v", err)
	}
	if trees := whole.gh.Requests()[githubtest.KindTree]; trees != 1 {
		t.Fatalf("whole: %d tree listings, want 1", trees)
	}
	if trees := windowed.gh.Requests()[githubtest.KindTree]; trees < 4 {
		t.Errorf("windowed: %d tree listings, want one a window (a mirror's window is 40 of 150)", trees)
	}
	if lists := windowedMirror.Stats().Lists; lists != 1 {
		t.Errorf("windowed: the prefix listed %d times, want once", lists)
	}
	got, want := mirrorBodies(windowedMirror), mirrorBodies(wholeMirror)
	if len(got) != n+1 || !maps.Equal(got, want) {
		t.Errorf("windowed mirror: %d objects, whole %d (want %d and the marker), or they differ", len(got), len(want), n)
	}
	gotValues, wantValues := windowed.registryValues(), whole.registryValues()
	if !maps.Equal(gotValues, wantValues) {
		t.Errorf("windowed registry differs from a whole first sync's (%d keys, whole %d)", len(gotValues), len(wantValues))
	}
	sum := res.Summary
	if sum.Mirror == nil || sum.Mirror.Uploaded != n || sum.Mirror.Objects != n+1 || sum.Mirror.Converged == "" {
		t.Errorf("windowed mirror summary %+v: want %d uploaded, %d objects (the marker too), converged", sum.Mirror, n, n+1)
	}
	if diff := recordDiff(t, windowed.lastRun(), whole.lastRun()); diff != "" {
		t.Errorf("lastRun differs from a whole first sync's: %s", diff)
	}
	if !sameChanges(res.Plan, wantRes.Plan) {
		t.Errorf("windowed plan counts %+v, whole %+v", res.Plan.Counts(), wantRes.Plan.Counts())
	}
	windowed.repo.Write("규정/새 정책.md", "# 새 정책\n")
	windowed.head = windowed.repo.Commit("add one")
	res, err = windowed.run(t.Context(), syncer.Options{BatchSize: 20, FirstSyncWindow: 160})
	if err != nil || res.Summary.Mode != "incremental" || res.Summary.Mirror.Uploaded != 1 || windowedMirror.Stats().Lists != 1 {
		t.Errorf("next run: %v, %s mode, mirror %+v, %d prefix listings; want incremental, one upload, no listing", err, res.Summary.Mode, res.Summary.Mirror, windowedMirror.Stats().Lists)
	}
}

func sameChanges(a, b policy.Plan) bool { return a.Counts() == b.Counts() }

// TestWindows_Mirror_PrefixHoldsAnObject_Whole: a first sync whose mirror
// prefix holds an object (a foreign one, here) plans the whole tree, as
// the mirror's repairs and its guard span every name, listing the prefix
// once: the foreign object goes, the mirror converges.
func TestWindows_Mirror_PrefixHoldsAnObject_Whole(t *testing.T) {
	t.Parallel()
	const n = 60
	r, m := mirroredCFRig(t, n, false)
	m.PutRaw(t, prefix+"낯선 객체.md", []byte("foreign"))
	res, err := r.run(t.Context(), syncer.Options{BatchSize: 50, FirstSyncWindow: 40, AllowMassDelete: true})
	if err != nil || res.Summary.Added != n || res.Plan.Omitted != nil || len(res.Plan.Items) != n {
		t.Fatalf("%v, %d added, %d items (omitted %+v): want the whole plan of %d", err, res.Summary.Added, len(res.Plan.Items), res.Plan.Omitted, n)
	}
	if trees, lists := r.gh.Requests()[githubtest.KindTree], m.Stats().Lists; trees != 2 || lists != 1 {
		t.Errorf("%d tree listings, %d prefix listings: want 2 (the first window's, then the whole tree) and 1", trees, lists)
	}
	if _, ok := m.Objects()[prefix+"낯선 객체.md"]; ok || len(m.Objects()) != n {
		t.Errorf("mirror holds %d objects (the foreign one: %v), want the %d policies'", len(m.Objects()), ok, n)
	}
	if s := res.Summary.Mirror; s == nil || s.Repaired != 1 || s.Objects != n || s.Converged == "" {
		t.Errorf("mirror summary %+v: want the foreign object repaired, %d objects, converged", s, n)
	}
}

// TestWindows_Mirror_DeadlineBetweenWindows_NextRunCompletesIt: a first
// sync with a mirror stopped by its deadline after a window landed is
// partial, its mirror counted as far as it got (holding what the registry
// publishes, as a whole run cut short leaves it); the
// next run (full, whole) uploads and writes the rest, each policy once,
// and leaves the mirror equal to the head.
func TestWindows_Mirror_DeadlineBetweenWindows_NextRunCompletesIt(t *testing.T) {
	t.Parallel()
	const n = 120
	r, m := mirroredCFRig(t, n, false)
	ctx := newNearingDeadline()
	opt := syncer.Options{BatchSize: 50, FirstSyncWindow: 160, Concurrency: 1}
	r.bulk.after = func(int) {
		if len(r.policyNames()) > 0 {
			ctx.near(time.Second)
		}
	}
	res, err := r.run(ctx, opt)
	sum := res.Summary
	if !errors.Is(err, syncer.ErrPartial) || !sum.StoppedEarly || sum.Mirror == nil {
		t.Fatalf("err = %v, stopped early %v, mirror %+v: want partial, stopped early", err, sum.StoppedEarly, sum.Mirror)
	}
	written := len(r.policyNames())
	if written == 0 || written == n || sum.Added != written || sum.Mirror.Uploaded != written || sum.Mirror.Objects != written || len(m.Objects()) != written {
		t.Errorf("%d written, %d added, mirror %+v holding %d: want the first window's, counted alike", written, sum.Added, sum.Mirror, len(m.Objects()))
	}
	r.bulk.after = nil
	res, err = r.run(t.Context(), opt)
	if err != nil || res.Summary.Mode != "full" || res.Summary.Added != n-written || res.Summary.Mirror.Converged == "" || res.Summary.Mirror.Objects != n {
		t.Fatalf("next run: %v, %s mode, %d added, mirror %+v; want full, the %d waiting added, %d objects, converged", err, res.Summary.Mode, res.Summary.Added, res.Summary.Mirror, n-written, n)
	}
	checkWrittenOnce(t, r.bulk.landings(), n, 2)
	for key, o := range m.Objects() {
		name, _ := mirror.PolicyNameOf(prefix, key)
		e, ok, err := r.s.Registry.Policy(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		if !ok || e.ContentETag != mirror.ETagOf(o.Body) {
			t.Errorf("%s: entry %v records ETag %q, the mirror holds %q", key, ok, e.ContentETag, mirror.ETagOf(o.Body))
		}
	}
}

// TestWindows_Mirror_BudgetCutsALaterWindow_StrayUploadsNotConverged: a
// budget that cuts a later window after its titles step uploaded leaves
// objects the registry does not publish: the mirror is not converged, as a
// whole run's is not (counted across windows, not only in the last), and
// the next day's full run publishes them, each policy once, converged.
func TestWindows_Mirror_BudgetCutsALaterWindow_StrayUploadsNotConverged(t *testing.T) {
	t.Parallel()
	const n, budget = 120, 140
	for _, window := range []int{8 * n, 160} {
		r, m := mirroredCFRig(t, n, false)
		opt := syncer.Options{BatchSize: 50, FirstSyncWindow: window, DailyWriteBudget: budget}
		res, err := r.run(t.Context(), opt)
		sum := res.Summary
		written := len(r.policyNames())
		if !errors.Is(err, syncer.ErrPartial) || written == 0 || written == n || sum.Mirror == nil || sum.Mirror.Converged != "" {
			t.Fatalf("window %d: %v, %d written, mirror %+v: want partial, some written, the mirror not converged", window, err, written, sum.Mirror)
		}
		if len(m.Objects()) <= written {
			t.Errorf("window %d: mirror holds %d objects, registry %d: want the cut window's uploads beside them", window, len(m.Objects()), written)
		}
		if trees, windowed := r.gh.Requests()[githubtest.KindTree], window < n*4; windowed != (trees > 1) {
			t.Errorf("window %d: %d tree listings; want one a window in windows (%v), else one", window, trees, windowed)
		}
		r.clock.Advance(24 * time.Hour)
		res, err = r.run(t.Context(), syncer.Options{BatchSize: 50})
		if err != nil || res.Summary.Mode != "full" || res.Summary.Added != n-written || res.Summary.Mirror.Converged == "" || len(m.Objects()) != n {
			t.Fatalf("window %d, next day: %v, %s mode, %d added, mirror %+v holding %d; want full, %d added, converged", window, err, res.Summary.Mode, res.Summary.Added, res.Summary.Mirror, len(m.Objects()), n-written)
		}
		checkWrittenOnce(t, r.bulk.landings(), n, 2)
	}
}

// downAfter is a mirror target whose store goes down (every put
// unavailable) after its first puts.
type downAfter struct {
	*mirrortest.Memory
	mu   sync.Mutex
	puts int
}

func (d *downAfter) Put(ctx context.Context, o mirror.Object) (string, error) {
	d.mu.Lock()
	d.puts--
	down := d.puts < 0
	d.mu.Unlock()
	if down {
		return "", fmt.Errorf("store down: %w", mirror.ErrUnavailable)
	}
	return d.Memory.Put(ctx, o)
}

// TestWindows_Mirror_StoreDownInALaterWindow_ItemFailuresAsWhole: a store
// that goes down after the first window's uploads landed fails the later
// windows' uploads as item failures, recorded for retry, as in a whole run
// where some uploads landed — not an outage that records none (the windows
// before counted as landed).
func TestWindows_Mirror_StoreDownInALaterWindow_ItemFailuresAsWhole(t *testing.T) {
	t.Parallel()
	const n = 120
	r, m := mirroredCFRig(t, n, false)
	_, first := windowsOf(t, n, 40)
	r.s.Mirror = &downAfter{Memory: m, puts: first}
	res, err := r.run(t.Context(), syncer.Options{BatchSize: 50, FirstSyncWindow: 160})
	sum := res.Summary
	if !errors.Is(err, syncer.ErrPartial) || errors.Is(err, syncer.ErrOutage) || len(sum.Failures) != n-first || sum.Added != first {
		t.Fatalf("%v: %d failures, %d added; want partial (not an outage), %d failed, %d added", err, len(sum.Failures), sum.Added, n-first, first)
	}
	if trees := r.gh.Requests()[githubtest.KindTree]; trees < 2 {
		t.Errorf("%d tree listings: not in windows", trees)
	}
	if len(sum.Pending) != n-first {
		t.Errorf("%d pending: want every failed upload's policy recorded for retry (%d)", len(sum.Pending), n-first)
	}
}
