package syncer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/registrytest"
	"github.com/knue/syncjob/internal/syncer"
)

// killStale runs r's syncer once, killing the process when its first write
// (the lease) has landed: the lease is left behind, the state unclean.
func killStale(r *staleRig) {
	r.t.Helper()
	ks := &killSwitch{}
	s := *r.s
	s.Registry = registry.New(&killStore{Store: r.lag, ks: ks, lagging: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ks.arm(1, true, true, cancel)
	if _, err := s.Run(ctx, r.opt); err == nil {
		r.t.Fatal("setup: the killed run succeeded")
	}
	if !ks.disarm() {
		r.t.Fatal("setup: the kill did not fire")
	}
}

// seededTwo commits 가 and 나 and returns the commit; syncedTwo syncs it
// too (the first sync).
func seededTwo(r *staleRig) string {
	r.repo.Write("a/가.md", "# 가\n")
	r.repo.Write("a/나.md", "# 나\n")
	return r.repo.Commit("seed")
}

func syncedTwo(r *staleRig) string {
	r.t.Helper()
	base := seededTwo(r)
	if _, err := r.run(2 * time.Hour); err != nil {
		r.t.Fatalf("first sync: %v", err)
	}
	return base
}

// dirtyRun runs r's syncer once with lastCommit refused: its lastRun is
// dirty (it wrote), lastCommit stays. Two hours pass.
func dirtyRun(r *staleRig) {
	r.t.Helper()
	faulty := registrytest.NewFaulty(r.lag)
	faulty.FailKeys(map[string]error{registry.LastCommitKey: errors.New("refused")})
	s := *r.s
	s.Registry = registry.New(faulty)
	if _, err := s.Run(r.t.Context(), r.opt); err == nil {
		r.t.Fatal("setup: the run recorded lastCommit")
	}
	r.clock.Advance(2 * time.Hour)
}

// forcePushedBack resets the branch to base (a force push: what came
// after it is gone) and commits an edit of 나 on it: the new head.
func forcePushedBack(r *staleRig, base string) string {
	r.repo.Reset(base)
	r.repo.Write("a/나.md", "# 나 개정\n")
	return r.repo.Commit("edit 나")
}

// noSuccessUnlessHead fails the test when the run (res, err) reported
// success, or partial, while the registry is not head.
func noSuccessUnlessHead(r *staleRig, head string, res syncer.Result, err error, what string) {
	r.t.Helper()
	if diff := r.headMismatch(head); diff != "" && (err == nil || res.Summary.Status == policy.RunPartial) {
		r.t.Errorf("%s: %v (status %s, mode %s %q, waits %v) while %s",
			what, err, res.Summary.Status, res.Summary.Mode, res.Summary.ModeReason, r.waits, diff)
	}
}

// A run killed leaving its lease makes the next one a full repair. A run
// seconds after that repair reads the state from before it (the dead
// run's lease, the older lastCommit) and the entries from before its
// writes. When a force push has meanwhile dropped the repair's head, no
// commit of the range from that lastCommit names what the repair wrote: the
// run must not trust those entries and report the registry as the head
// (soak seeds 27 and 793, memory backend: step 21 and step 17).
func TestStaleReads_ForcePushSecondsAfterARepair_RepairsWriteIsNotTrusted(t *testing.T) {
	t.Parallel()
	r := newStaleRig(t)
	base := syncedTwo(r)
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Commit("edit 가")
	killStale(r)
	r.clock.Advance(2 * time.Hour) // the dead run's lease expires
	if res, err := r.run(30 * time.Second); err != nil || res.Summary.Mode != "full" {
		t.Fatalf("setup: the repair: %v (mode %s), want a full run that succeeds", err, res.Summary.Mode)
	}
	head := forcePushedBack(r, base) // the edit of 가 is gone
	res, err := r.run(time.Hour)
	noSuccessUnlessHead(r, head, res, err, "the run 30 s after the repair")
}

// The run a forced push starts, seconds after a clean run, reads the state
// from before that run: its lastCommit, and the entries it wrote. The
// forced push dropped that run's head, so no commit of the range names
// what it wrote. A webhook run knows the push was forced (GitHub's push
// event says so): on a registry whose reads lag it waits out the window
// before trusting what it reads. Without Forced, the same run is the gap
// docs/design.md "Stale reads" names (a force push over a clean run).
func TestStaleReads_ForcedPushSecondsAfterACleanRun_WebhookRunWaits(t *testing.T) {
	t.Parallel()
	r := newStaleRig(t)
	base := editSyncedCleanly(r)
	head := forcePushedBack(r, base) // the edit of 가 is gone
	r.opt.Trigger, r.opt.After, r.opt.Forced = syncer.TriggerWebhook, head, true
	res, err := r.run(time.Hour)
	noSuccessUnlessHead(r, head, res, err, "the forced push's run 30 s after a clean run")
	if len(r.waits) == 0 {
		t.Errorf("the forced push's run did not wait out the window")
	}
}

// A first sync that wrote, then failed to record lastCommit, leaves
// lastRun dirty and no lastCommit. Its repair (the next run, a full first
// run again) lands; a run 30 s later reads lastCommit still empty and the
// dirty lastRun (the repair's record not visible yet) and goes the
// first-sync branch of readSettled, which asked failedWriting only with a
// lastCommit: it trusted entries from before the repair's writes, and after
// a force push back to the first sync's version of a policy left the
// repair's version in place and recorded success (review).
func TestStaleReads_DirtyFirstSync_RepairThenForcePush_NotTrusted(t *testing.T) {
	t.Parallel()
	r := newStaleRig(t)
	base := seededTwo(r)
	dirtyRun(r) // the first sync
	if lr, _ := r.truth.LastRun(t.Context()); lr == nil || !lr.Dirty {
		t.Fatalf("setup: lastRun %+v, want dirty", lr)
	}
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Commit("edit 가")
	if res, err := r.run(30 * time.Second); err != nil {
		t.Fatalf("setup: the repair: %v (%s)", err, res.Summary.Mode)
	}
	head := forcePushedBack(r, base) // the edit of 가 is gone
	res, err := r.run(time.Hour)
	noSuccessUnlessHead(r, head, res, err, "the run 30 s after the repair")
}

// After one dirty run on KV, every run waits out the consistency window
// before it reads (failedWriting, 927d17d). A run whose deadline
// (MAX_DURATION) is shorter than that wait failed in it, and a failed run
// after an unclean one is itself dirty, so the next run waited again: the
// registry never converged (review). Such a run reads as it is and writes,
// so the registry converges; it cannot say success (a later review: what
// it trusted may predate the writes it should have waited for), so each is
// partial, naming MAX_DURATION, never failed nor dirty, and the first run
// with time to wait ends a success.
func TestStaleReads_DirtyRun_DeadlineShorterThanWindow_NextRunsStillConverge(t *testing.T) {
	t.Parallel()
	r := newStaleRig(t)
	syncedTwo(r)
	r.repo.Write("a/가.md", "# 가 개정\n")
	head := r.repo.Commit("edit 가")
	dirtyRun(r)
	sleepCutByDeadline(r)
	opt := r.opt
	opt.MaxDuration = 300 * time.Millisecond // stands for MAX_DURATION=1m against the 60 s window
	for i := range 3 {
		res, err := r.s.Run(context.Background(), opt)
		r.clock.Advance(2 * time.Hour)
		t.Logf("run %d: %v (status %s, dirty %v)", i+1, err, res.Summary.Status, res.Summary.Dirty)
		if !errors.Is(err, syncer.ErrPartial) || res.Summary.Dirty || !strings.Contains(res.Summary.Unverified, "MAX_DURATION") {
			t.Errorf("run %d after the dirty one, with no time to wait: %v (status %s, dirty %v); want partial, not dirty, naming MAX_DURATION", i+1, err, res.Summary.Status, res.Summary.Dirty)
		}
	}
	if diff := r.headMismatch(head); diff != "" {
		t.Errorf("three runs after the dirty one, each within its deadline: %s", diff)
	}
	if res, err := r.s.Run(context.Background(), r.opt); err != nil || res.Summary.Status != policy.RunSuccess {
		t.Errorf("a run with time to wait: %v (status %s); want success", err, res.Summary.Status)
	}
}

// A dry run takes no lease and writes nothing; after a dirty run on KV it
// waited out the whole consistency window (failedWriting) before it
// printed its plan: a minute's pause for `sync --dry-run` or a Lambda
// preview, every time until a run cleaned the state (review: cost).
func TestStaleReads_DryRunAfterDirtyRun_DoesNotWaitTheWindow(t *testing.T) {
	t.Parallel()
	r := newStaleRig(t)
	syncedTwo(r)
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Commit("edit 가")
	dirtyRun(r)
	r.waits = nil
	opt := r.opt
	opt.DryRun = true
	if _, err := r.s.Run(t.Context(), opt); err != nil {
		t.Fatalf("dry run: %v", err)
	}
	for _, w := range r.waits {
		if w >= syncer.DefaultConsistencyWindow {
			t.Errorf("the dry run waited %s (waits %v)", w, r.waits)
		}
	}
}

// A forced push's run 30 s after a clean run must wait out the window
// (untrusted); with MAX_DURATION=90s it has no time to. It reads as it is,
// and may miss the clean run's writes: it cannot say success. Review: it
// recorded success while 가 held the version the push dropped. It is
// partial, naming why, keeps lastCommit, and the next run with time waits
// out the window and makes the registry the head.
func TestStaleReads_ForcedPush_DeadlineTooShortToWait_PartialUnverified_NextRunRepairs(t *testing.T) {
	t.Parallel()
	r := newStaleRig(t)
	base := editSyncedCleanly(r)
	before, err := r.truth.LastCommit(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	head := forcePushedBack(r, base) // the edit of 가 is gone
	opt := r.opt
	r.opt.Trigger, r.opt.After, r.opt.Forced = syncer.TriggerWebhook, head, true
	r.opt.MaxDuration = 90 * time.Second // less than two 60 s windows
	res, err := r.run(2 * time.Hour)
	if res.Summary.Status == policy.RunSuccess || !errors.Is(err, syncer.ErrPartial) || !strings.Contains(res.Summary.Unverified, "MAX_DURATION") {
		t.Fatalf("the forced push's run with no time to wait: %v (status %s, unverified %q); want partial, saying the reads were not verified and naming MAX_DURATION", err, res.Summary.Status, res.Summary.Unverified)
	}
	if got, _ := r.truth.LastCommit(t.Context()); got != before {
		t.Errorf("lastCommit = %s after an unverified run; want it kept at %s", got, before)
	}
	r.opt = opt
	r.waits = nil
	res, err = r.run(time.Hour)
	if err != nil || res.Summary.Status != policy.RunSuccess || len(r.waits) == 0 {
		t.Errorf("the next run: %v (status %s, waits %v); want it to wait out the window and succeed", err, res.Summary.Status, r.waits)
	}
	if diff := r.headMismatch(head); diff != "" {
		t.Errorf("after the next run: %s", diff)
	}
}

// editSyncedCleanly syncs two policies, edits 가 and syncs the edit in a
// clean run, 30 s before the clock's now; it returns the commit before the
// edit.
func editSyncedCleanly(r *staleRig) (base string) {
	r.t.Helper()
	base = syncedTwo(r)
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Commit("edit 가")
	if _, err := r.run(30 * time.Second); err != nil {
		r.t.Fatalf("setup: the clean run: %v", err)
	}
	return base
}

// sleepCutByDeadline makes the syncer's sleep retry.Sleep's: a wait the
// run's deadline cuts fails at the deadline; one that fits moves the clock.
func sleepCutByDeadline(r *staleRig) {
	r.s.Sleep = func(ctx context.Context, d time.Duration) error {
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
			<-ctx.Done()
			return ctx.Err()
		}
		r.clock.Advance(d)
		return ctx.Err()
	}
}
