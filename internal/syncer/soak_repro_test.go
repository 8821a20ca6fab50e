package syncer_test

// Minimal reproductions of the violations the soak test found, one test
// per root cause (see soak_test.go). Each states the rule of docs/design.md.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/syncer"
)

// killable returns r's syncer behind a kill switch.
func killable(r *rig) (*syncer.Syncer, *killSwitch) {
	ks := &killSwitch{}
	s := *r.s
	s.Registry = registry.New(&killStore{Store: r.store, ks: ks})
	return &s, ks
}

// runKilled runs s, killing the process (nothing lands after) once its
// nth registry write has landed.
func runKilled(r *rig, s *syncer.Syncer, ks *killSwitch, nth int, opt syncer.Options) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ks.arm(nth, true, true, cancel)
	return runArmed(ctx, r, s, ks, opt)
}

// runKilledBeforeRecord runs s, killing the process when it starts to
// record the run (its writes landed, its record does not).
func runKilledBeforeRecord(r *rig, s *syncer.Syncer, ks *killSwitch, opt syncer.Options) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ks.armAtKey(registry.LastRunKey, cancel)
	return runArmed(ctx, r, s, ks, opt)
}

func runArmed(ctx context.Context, r *rig, s *syncer.Syncer, ks *killSwitch, opt syncer.Options) error {
	_, err := s.Run(ctx, opt)
	ks.disarm()
	r.clock.Advance(time.Hour)
	return err
}

// "Announce before publish: a policy's queue: entry lands before (never
// after) its new policy: value" — here the queue write fails (and so does
// recording the failure): the new value is published, the queue still
// announces the old version.
func TestSoakRepro_QueueWriteFails_PolicyNotPublishedUnannounced(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	r.repo.Write("a/가.md", "# 가 개정\n")
	head := r.repo.Commit("edit")
	r.store.FailKeys(map[string]error{"queue:가": errors.New("queue write refused")})
	_, err := r.run(syncer.Options{})
	r.store.FailKeys(nil)
	want := r.repo.BlobSHA(head, "a/가.md")
	if p, q := r.policies()["가"], r.queueEntries()["가"]; p.SHA == want && q.SHA != want {
		t.Errorf("policy:가 holds %s but queue:가 holds %s (run: %v): an update no one is told about", short(p.SHA), short(q.SHA), err)
	}
}

// The same rule when the process dies between two batches: with a batch
// size of 1 the policy's batch goes first, and a kill after it lands
// leaves the update unannounced.
func TestSoakRepro_KilledBetweenBatches_PolicyNotPublishedUnannounced(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	r.repo.Write("a/가.md", "# 가 개정\n")
	head := r.repo.Commit("edit")
	s, ks := killable(r)
	err := runKilled(r, s, ks, 1, syncer.Options{BatchSize: 1, Concurrency: 1})
	want := r.repo.BlobSHA(head, "a/가.md")
	if p, q := r.policies()["가"], r.queueEntries()["가"]; p.SHA == want && q.SHA != want {
		t.Errorf("killed after its first write: policy:가 holds %s but queue:가 holds %s (run: %v)", short(p.SHA), short(q.SHA), err)
	}
}

// "Mode: full ... when the previous run was not clean (it failed after
// writing, was killed, or its lastCommit write was lost: the registry may
// then match neither lastCommit nor the head, so a compare from lastCommit
// would miss what it half-wrote)". Here the half-written edit is reverted
// by the next commit: the compare lastCommit...head does not show the file,
// the next run is incremental, exits 0, and the registry keeps the edit.
func TestSoakRepro_UncleanRunThenRevert_NextRunRestoresHead(t *testing.T) {
	t.Parallel()
	boom := errors.New("refused")
	for _, tc := range []struct {
		name    string
		unclean func(r *rig) error
	}{
		{"failure not recorded", func(r *rig) error {
			// queue:가 fails, and so does recording the failure: status failed, lastCommit stays
			r.store.FailKeys(map[string]error{"queue:가": boom})
			defer r.store.FailKeys(nil)
			_, err := r.run(syncer.Options{})
			return err
		}},
		{"lastCommit write lost", func(r *rig) error {
			r.store.FailKeys(map[string]error{registry.LastCommitKey: boom})
			defer r.store.FailKeys(nil)
			_, err := r.run(syncer.Options{})
			return err
		}},
		{"lastRun write lost", func(r *rig) error {
			// the record does not land; the embedded store has no lease to tell
			r.store.FailKeys(map[string]error{registry.LastRunKey: boom})
			defer r.store.FailKeys(nil)
			_, err := r.run(syncer.Options{})
			return err
		}},
		{"killed before its record", func(r *rig) error {
			s, ks := killable(r)
			return runKilledBeforeRecord(r, s, ks, syncer.Options{})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.seed()
			r.mustRun()
			r.repo.Write("a/가.md", "# 가 개정\n")
			r.repo.Commit("edit")
			uncleanErr := tc.unclean(r)
			if uncleanErr == nil {
				t.Fatal("the unclean run succeeded")
			}
			r.repo.Write("a/가.md", "# 가\n")
			head := r.repo.Commit("revert the edit")
			res, err := r.run(syncer.Options{})
			want := r.repo.BlobSHA(head, "a/가.md")
			if got := r.policies()["가"]; err == nil && got.SHA != want {
				t.Errorf("after %q (%v), the next run (mode %s) exits 0 but policy:가 holds %s (%q), head has %s",
					tc.name, uncleanErr, res.Summary.Mode, short(got.SHA), got.Title, short(want))
			}
		})
	}
}

// "While a dead letter holds back a version the head wants, runs are
// partial (exit 3)"; "a run never reports success while it knows the
// registry differs from the head".
func TestSoakRepro_DeadLetterHoldsBack_RunIsPartial(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Commit("edit")
	r.store.FailKeys(map[string]error{"policy:가": errors.New("kv down")})
	for range 3 {
		r.run(syncer.Options{})
	}
	r.store.FailKeys(nil)
	if _, ok := r.deadLetters()["가"]; !ok {
		t.Fatal("no dead letter after three failures")
	}
	for _, opt := range []syncer.Options{{}, {Full: true}} {
		res, err := r.run(opt)
		if !errors.Is(err, syncer.ErrPartial) || res.Summary.Status != policy.RunPartial {
			t.Errorf("full=%v: run returned %v, status %s, while dead-letter:가 holds back the head's version", opt.Full, err, res.Summary.Status)
		}
	}
}

// "Keys Cloudflare reports unsuccessful, 5xx answers and timeouts are
// retried inside the run (bounded backoff) before an item counts as
// failed." One key reported unsuccessful once fails the run instead.
func TestSoakRepro_Cloudflare_KeyUnsuccessfulOnce_RetriedWithinRun(t *testing.T) {
	t.Parallel()
	for _, key := range []string{registry.LeaseKey, "policy:가", registry.LastRunKey} {
		t.Run(key, func(t *testing.T) {
			repo := githubtest.NewRepo(t)
			gh := githubtest.NewServer(t, "knue", "policies", repo)
			repo.Write("a/가.md", "# 가\n")
			repo.Commit("seed")
			r := newSoakRig(t, backendCloudflare, 1, repo, gh, 2)
			r.cfHTTP.afterWrite = func() {
				if r.cf.Faults().UnsuccessfulKeys > 0 {
					r.cf.FailKeys() // once
				}
			}
			if _, _, err := r.run(runFaults{stuck: []string{key}}, r.opt, 0); err != nil {
				t.Errorf("%s unsuccessful once: exit %d: %v", key, exitCode(err), err)
			}
		})
	}
}
