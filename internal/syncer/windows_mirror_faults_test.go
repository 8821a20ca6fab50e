package syncer_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/mirror/mirrortest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/syncer"
)

// Faults in a first sync in windows with a content mirror: the same
// faults leave the record a whole run leaves, and seeded random faults are
// repaired by the runs after.

var (
	mirrorFaultsFrom  = flag.Uint64("mirrorfaults.from", 1, "TestWindows_Mirror_RandomFaults: the first seed")
	mirrorFaultsSeeds = flag.Uint64("mirrorfaults.seeds", 24, "TestWindows_Mirror_RandomFaults: how many seeds")
)

// lostAnswers stores the object, then answers unavailable, for its keys
// (lostAnswer's, for several).
type lostAnswers struct {
	*mirrortest.Memory
	keys map[string]bool
}

func (l *lostAnswers) Put(ctx context.Context, o mirror.Object) (string, error) {
	etag, err := l.Memory.Put(ctx, o)
	if err == nil && l.keys[o.Key] {
		return "", fmt.Errorf("answer lost: %w", mirror.ErrUnavailable)
	}
	return etag, err
}

// TestWindows_Mirror_SameFaultsSameRecordAsWhole: refused registry keys, a
// put the store rejects and puts whose answers are lost, spread over the
// windows, leave the record a whole first sync leaves — the mirror's
// counts (uploaded, objects, not converged) included — and as many
// objects.
func TestWindows_Mirror_SameFaultsSameRecordAsWhole(t *testing.T) {
	t.Parallel()
	const n = 150
	rig := func() (*cfRig, *mirrortest.Memory) {
		r, m := mirroredCFRig(t, n, true)
		m.PutRaw(t, prefix, nil)
		r.cf.FailKeys(registry.PolicyKey("정책 0007"), registry.QueueKey("정책 0100"), registry.PolicyKey("정책 0042"), registry.PolicyKey("정책 0143"))
		m.FailPut(mirror.Key(prefix, "정책 0011"), errors.New("bad object: rejected"))
		r.s.Mirror = &lostAnswers{Memory: m, keys: map[string]bool{mirror.Key(prefix, "정책 0058"): true, mirror.Key(prefix, "정책 0121"): true}}
		return r, m
	}
	whole, wholeMirror := rig()
	windowed, windowedMirror := rig()
	_, wantErr := whole.run(t.Context(), syncer.Options{BatchSize: 20, FirstSyncWindow: 8 * n})
	_, err := windowed.run(t.Context(), syncer.Options{BatchSize: 20, FirstSyncWindow: 160})
	if !errors.Is(err, syncer.ErrItemsFailed) || !errors.Is(wantErr, syncer.ErrItemsFailed) {
		t.Fatalf("windowed: %v; whole: %v; want items failed in both", err, wantErr)
	}
	if trees := windowed.gh.Requests()[githubtest.KindTree]; trees < 2 {
		t.Fatalf("%d tree listings: not in windows", trees)
	}
	got, want := windowed.lastRun(), whole.lastRun()
	if got.Mirror == nil || got.Mirror.Converged != "" {
		t.Errorf("windowed mirror %+v: want not converged (objects the registry does not publish)", got.Mirror)
	}
	// the errors' texts quote the batches, which windows split: the
	// failures are compared by name
	if diff := recordDiff(t, got, want, "error", "failures"); diff != "" {
		t.Errorf("lastRun differs from a whole first sync's: %s", diff)
	}
	if a, b := failedNames(got.Failures), failedNames(want.Failures); !slices.Equal(a, b) || len(a) != 7 {
		t.Errorf("failures %v, whole %v; want the same 7", a, b)
	}
	if a, b := len(windowedMirror.Objects()), len(wholeMirror.Objects()); a != b {
		t.Errorf("mirror holds %d objects windowed, %d whole", a, b)
	}
}

// randomFaults is a mirror whose puts fail at random while on: the store
// unavailable, the object stored or not.
type randomFaults struct {
	*mirrortest.Memory
	mu   sync.Mutex
	rng  *rand.Rand
	rate float64
	on   bool
}

func (f *randomFaults) Put(ctx context.Context, o mirror.Object) (string, error) {
	f.mu.Lock()
	x, y, on := f.rng.Float64(), f.rng.Float64(), f.on
	f.mu.Unlock()
	if on && x < f.rate {
		if y < 0.5 {
			_, _ = f.Memory.Put(ctx, o) // stored, its answer lost
		}
		return "", fmt.Errorf("flaky: %w", mirror.ErrUnavailable)
	}
	return f.Memory.Put(ctx, o)
}

func (f *randomFaults) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.on = false
}

// TestWindows_Mirror_RandomFaults_NextRunsConverge: seeded first syncs in
// windows with a mirror (window, batch and concurrency drawn; a folder
// marker or not), under a deadline at a random write, refused registry
// keys, failing puts and a write budget. After the first run the mirror
// is never called converged while it holds a version the registry does
// not publish, and every published policy's object is the one its entry
// records; clean runs after it end in success with the mirror equal to
// the head, every entry's contentEtag its object's, and each policy
// written once. -mirrorfaults.from and -mirrorfaults.seeds widen it.
func TestWindows_Mirror_RandomFaults_NextRunsConverge(t *testing.T) {
	t.Parallel()
	for seed := *mirrorFaultsFrom; seed < *mirrorFaultsFrom+*mirrorFaultsSeeds; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 99))
			const n = 120
			r, m := mirroredCFRig(t, n, false)
			fm := &randomFaults{Memory: m, rng: rand.New(rand.NewPCG(seed, 7)), rate: 0.05 * float64(rng.IntN(3)), on: true}
			r.s.Mirror = fm
			ctx := newNearingDeadline()
			nearAt := 0
			if rng.IntN(2) == 0 {
				nearAt = 2 + rng.IntN(8)
			}
			r.bulk.before = func(k int) {
				if k == nearAt {
					ctx.near(time.Second)
				}
			}
			var keys []string
			for range rng.IntN(4) {
				name := policy.NameOf(fmt.Sprintf("규정/00/정책 %04d.md", 7*rng.IntN(n/7)))
				if rng.IntN(2) == 0 {
					keys = append(keys, registry.PolicyKey(name))
				} else {
					keys = append(keys, registry.QueueKey(name))
				}
			}
			r.cf.FailKeys(keys...)
			opt := syncer.Options{BatchSize: 20 + rng.IntN(40), FirstSyncWindow: 40 + rng.IntN(400), Concurrency: 1 + rng.IntN(2)}
			if rng.IntN(3) == 0 {
				m.PutRaw(t, prefix, nil)
			}
			if rng.IntN(3) == 0 {
				opt.DailyWriteBudget = int64(60 + rng.IntN(200))
			}
			res, err := r.run(ctx, opt)
			t.Logf("run 1 (deadline near at write %d, refused %v, put failures %.2f, budget %d, %+v): %v; mirror %+v", nearAt, keys, fm.rate, opt.DailyWriteBudget, opt, err, res.Summary.Mirror)
			checkPublishedMirrored(t, r, m, res.Summary)
			r.bulk.before = nil
			r.cf.FailKeys()
			fm.stop()
			r.clock.Advance(24 * time.Hour)
			for i := range 4 {
				res, err = r.run(t.Context(), syncer.Options{BatchSize: 50, ConsistencyWindow: time.Millisecond})
				t.Logf("run %d: %v, %s; mirror %+v", i+2, err, res.Summary.Mode, res.Summary.Mirror)
				if err == nil {
					break
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			for key, reqs := range r.bulk.landings() {
				if strings.HasPrefix(key, registry.PolicyPrefix) && len(reqs) != 1 {
					t.Errorf("%s written %d times", key, len(reqs))
				}
			}
			checkMirrorIsHead(t, r, m, n, res.Summary)
		})
	}
}

// checkPublishedMirrored: every policy the registry publishes has the
// object its entry records, and a mirror holding a version the registry
// does not publish (or not the recorded one) is not called converged.
func checkPublishedMirrored(t *testing.T, r *cfRig, m *mirrortest.Memory, sum policy.RunSummary) {
	t.Helper()
	if sum.Mirror == nil {
		return
	}
	objs := m.Objects()
	stray := false
	for key, o := range objs {
		name, ok := mirror.PolicyNameOf(prefix, key)
		if !ok {
			continue // the folder marker
		}
		e, ok, err := r.s.Registry.Policy(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		if !ok || e.ContentETag != mirror.ETagOf(o.Body) {
			stray = true
		}
	}
	if stray && sum.Mirror.Converged != "" {
		t.Errorf("the mirror holds versions the registry does not publish, yet converged %q", sum.Mirror.Converged)
	}
	for _, name := range r.policyNames() {
		o, ok := objs[mirror.Key(prefix, name)]
		e, _, err := r.s.Registry.Policy(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		if !ok || e.ContentETag != mirror.ETagOf(o.Body) {
			t.Errorf("%s published: object held %v, entry records %q, object's %q", name, ok, e.ContentETag, mirror.ETagOf(o.Body))
		}
	}
}

// checkMirrorIsHead: the registry publishes n policies, the mirror holds
// exactly their objects (and a folder marker, if any), each entry's
// contentEtag and sha are its object's, and the run succeeded, the mirror
// converged and counted as it is.
func checkMirrorIsHead(t *testing.T, r *cfRig, m *mirrortest.Memory, n int, sum policy.RunSummary) {
	t.Helper()
	names := r.policyNames()
	if len(names) != n {
		t.Errorf("registry publishes %d, want %d", len(names), n)
	}
	objs := m.Objects()
	mirrored := 0
	for key, o := range objs {
		name, ok := mirror.PolicyNameOf(prefix, key)
		if !ok {
			continue
		}
		mirrored++
		e, found, err := r.s.Registry.Policy(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case !found:
			t.Errorf("%s: in the mirror, not published", key)
		case e.ContentETag != mirror.ETagOf(o.Body) || o.Metadata[mirror.MetaSHA] != e.SHA:
			t.Errorf("%s: entry records ETag %q and sha %q; the object's are %q and %q", key, e.ContentETag, e.SHA, mirror.ETagOf(o.Body), o.Metadata[mirror.MetaSHA])
		}
	}
	for _, name := range names {
		if _, ok := objs[mirror.Key(prefix, name)]; !ok {
			t.Errorf("%s published without its object", name)
		}
	}
	if mirrored != n {
		t.Errorf("the mirror holds %d policies' objects, want %d", mirrored, n)
	}
	if sum.Mirror == nil || sum.Mirror.Converged == "" || sum.Mirror.Objects != len(objs) || sum.Status != policy.RunSuccess {
		t.Errorf("summary %s, mirror %+v; want success, converged, %d objects", sum.Status, sum.Mirror, len(objs))
	}
}
