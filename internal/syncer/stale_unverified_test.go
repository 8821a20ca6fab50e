package syncer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/registrytest"
	"github.com/knue/syncjob/internal/syncer"
)

// An unverified run (no time to wait out the window) whose head is the
// lastCommit it keeps missed a policy (다) another run wrote seconds before
// it. The run after it is unclean: full, and it waits out the window, so it
// removes 다. Review: its state read "head unchanged, the previous run
// clean" (partial, not dirty, commitSHA == lastCommit), and it ended
// "unchanged", a success, with 다 in the registry.
func TestStaleReads_AfterAnUnverifiedRun_HeadAtLastCommit_NextRunWaitsAndRepairs(t *testing.T) {
	t.Parallel()
	r := newStaleRig(t)
	r.opt.LeaseTTL = -1 // no lease: keeps the lease's own staleness out of the picture
	base := syncedTwo(r)
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Commit("edit 가")
	dirtyRun(r) // X: lastRun dirty, lastCommit stays base; 2 h pass (all visible)

	// Y: adds 다, waits out the window (X was dirty), writes, and its
	// lastCommit write is refused: dirty again, lastCommit still base.
	r.repo.Write("c/다.md", "# 다\n")
	r.repo.Commit("add 다")
	faulty := registrytest.NewFaulty(r.lag)
	faulty.FailKeys(map[string]error{registry.LastCommitKey: errors.New("refused")})
	sy := *r.s
	sy.Registry = registry.New(faulty)
	if _, err := sy.Run(context.Background(), r.opt); err == nil {
		t.Fatal("setup: Y recorded lastCommit")
	}
	r.clock.Advance(30 * time.Second)

	// the branch is force-pushed back to base: head == lastCommit
	r.repo.Reset(base)

	// B: no time to wait; reads from before Y's writes; unverified
	opt := r.opt
	opt.MaxDuration = 90 * time.Second
	res, err := r.s.Run(context.Background(), opt)
	if res.Summary.Unverified == "" {
		t.Fatalf("setup: B was not unverified: %v (%s)", err, res.Summary.Status)
	}
	t.Logf("B: %v (status %s, mode %s)", err, res.Summary.Status, res.Summary.Mode)
	r.clock.Advance(2 * time.Hour)

	// C: with time; "the next run waits" (stale.go) -- does it?
	r.waits = nil
	res, err = r.run(time.Hour)
	t.Logf("C: %v (status %s, mode %s, waits %v)", err, res.Summary.Status, res.Summary.Mode, r.waits)
	if diff := r.headMismatch(base); diff != "" && res.Summary.Status == policy.RunSuccess {
		t.Errorf("the run after an unverified one recorded success (mode %s, waits %v) while %s", res.Summary.Mode, r.waits, diff)
	}
	if len(r.waits) == 0 && res.Summary.Status == policy.RunSuccess {
		t.Errorf("the run after an unverified one succeeded without waiting out the window (mode %s)", res.Summary.Mode)
	}
	_ = syncer.ErrPartial
}

// After an unverified run, which keeps lastCommit on purpose, the next run
// is full because that run could not wait out the window. Review: it said
// "the previous run's last commit was not recorded", a lost write that did
// not happen, and status and the summary line repeated it.
func TestStaleReads_AfterAnUnverifiedRun_ModeReasonSaysSo(t *testing.T) {
	t.Parallel()
	r := newStaleRig(t)
	base := syncedTwo(r)
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Commit("edit 가")
	if _, err := r.run(30 * time.Second); err != nil {
		t.Fatalf("setup: the clean run: %v", err)
	}
	head := forcePushedBack(r, base)
	opt := r.opt
	r.opt.Trigger, r.opt.After, r.opt.Forced = syncer.TriggerWebhook, head, true
	r.opt.MaxDuration = 90 * time.Second
	if res, _ := r.run(2 * time.Hour); res.Summary.Unverified == "" {
		t.Fatalf("setup: not unverified")
	}
	r.opt = opt
	res, _ := r.run(time.Hour)
	if res.Summary.ModeReason == "the previous run's last commit was not recorded" {
		t.Errorf("mode reason %q after a run that kept lastCommit on purpose (unverified)", res.Summary.ModeReason)
	}
}

// After a dirty run, with more commits since lastCommit than the run reads
// one by one (maxTouchedCommits, 100), and a deadline shorter than the
// window: the run has no time to wait, so it is unverified and reads
// without distrust; it is partial, and the registry reaches the head.
// Review: the read could not name the range's names (errRangeUnknown) and
// waited out the very window there was no time for, so the run failed in
// the wait, dirty, and every such run after it failed the same way.
func TestStaleReads_DirtyRun_ManyCommits_NoTimeToWait_PartialNotFailedInTheWait(t *testing.T) {
	t.Parallel()
	r := newStaleRig(t)
	syncedTwo(r)
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Commit("edit 가")
	dirtyRun(r)
	var head string
	for i := range 102 {
		r.repo.Write("a/나.md", fmt.Sprintf("# 나 %d\n", i))
		head = r.repo.Commit(fmt.Sprintf("edit 나 %d", i))
	}
	sleepCutByDeadline(r)
	opt := r.opt
	opt.MaxDuration = 300 * time.Millisecond // stands for MAX_DURATION=1m
	for i := range 2 {
		res, err := r.s.Run(context.Background(), opt)
		r.clock.Advance(2 * time.Hour)
		if !errors.Is(err, syncer.ErrPartial) {
			t.Errorf("run %d after the dirty one, no time to wait: %v (status %s, dirty %v, unverified %v); want partial, unverified", i+1, err, res.Summary.Status, res.Summary.Dirty, res.Summary.Unverified != "")
		}
	}
	if diff := r.headMismatch(head); diff != "" {
		t.Errorf("after two runs: %s", diff)
	}
}
