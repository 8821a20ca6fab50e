package syncer_test

import (
	"context"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
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
	r.repo.Write("a/가.md", "# 가\n")
	r.repo.Write("a/나.md", "# 나\n")
	base := r.repo.Commit("seed")
	if _, err := r.run(2 * time.Hour); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Commit("edit 가")
	killStale(r)
	r.clock.Advance(2 * time.Hour) // the dead run's lease expires
	if res, err := r.run(30 * time.Second); err != nil || res.Summary.Mode != "full" {
		t.Fatalf("setup: the repair: %v (mode %s), want a full run that succeeds", err, res.Summary.Mode)
	}
	r.repo.Reset(base) // force push: the edit of 가 is gone
	r.repo.Write("a/나.md", "# 나 개정\n")
	head := r.repo.Commit("edit 나")
	res, err := r.run(time.Hour)
	if diff := r.headMismatch(head); diff != "" && (err == nil || res.Summary.Status == policy.RunPartial) {
		t.Errorf("the run 30 s after the repair: %v (status %s, mode %s, waits %v) while %s",
			err, res.Summary.Status, res.Summary.Mode, r.waits, diff)
	}
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
	r.repo.Write("a/가.md", "# 가\n")
	r.repo.Write("a/나.md", "# 나\n")
	base := r.repo.Commit("seed")
	if _, err := r.run(2 * time.Hour); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Commit("edit 가")
	if _, err := r.run(30 * time.Second); err != nil {
		t.Fatalf("setup: the clean run: %v", err)
	}
	r.repo.Reset(base) // force push: the edit of 가 is gone
	r.repo.Write("a/나.md", "# 나 개정\n")
	head := r.repo.Commit("edit 나")
	r.opt.Trigger, r.opt.After, r.opt.Forced = syncer.TriggerWebhook, head, true
	res, err := r.run(time.Hour)
	if diff := r.headMismatch(head); diff != "" && (err == nil || res.Summary.Status == policy.RunPartial) {
		t.Errorf("the forced push's run 30 s after a clean run: %v (status %s, mode %s, waits %v) while %s",
			err, res.Summary.Status, res.Summary.Mode, r.waits, diff)
	}
	if len(r.waits) == 0 {
		t.Errorf("the forced push's run did not wait out the window")
	}
}
