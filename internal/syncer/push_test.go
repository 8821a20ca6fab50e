package syncer_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/syncer"
)

// A webhook run whose lastCommit is not the head GitHub reports for a
// moment after the push (an earlier push never synced: its delivery got a
// 502, or lastCommit was read stale on KV) still waits for the push: the
// lagging head does not contain it, and syncing that head would record
// success and leave the push to the daily run.
func TestPush_WebhookRun_LaggingHeadNotLastCommit_WaitsForThePush(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	r.repo.Write("c/하나.md", "# 하나\n")
	earlier := r.repo.Commit("a push whose delivery failed")
	r.repo.Write("c/새 규정.md", "# 새 규정\n")
	pushed := r.repo.Commit("push")
	r.gh.FailNext(githubtest.KindCommitSHA, 2, githubtest.StaleHead(earlier))
	res, err := r.run(syncer.Options{LeaseTTL: leased.LeaseTTL, Trigger: syncer.TriggerWebhook, After: pushed})
	if err == nil && res.Summary.CommitSHA != pushed {
		t.Errorf("webhook run for %s recorded %s over %s (lastCommit %s): the pushed commit, not in the head it synced, is left to the daily run",
			pushed, res.Summary.Status, res.Summary.CommitSHA, r.lastCommit())
	}
	if _, ok := r.policies()["새 규정"]; !ok && err == nil {
		t.Errorf("the pushed policy is not in the registry after a webhook run that returned no error")
	}
}

// A forced push, delivered while GitHub still reports the branch as it was:
// the pushed commit is on another line than that head (compare says
// "diverged"), as it would be for a branch rewritten since the push. The
// push event says it was forced, so the run waits for it rather than end
// unchanged without it.
func TestPush_WebhookRun_ForcedPushNotYetVisible_WaitsForIt(t *testing.T) {
	t.Parallel()
	res, forced, _, err := forcedPushNotYetVisible(t, false)
	if err == nil && res.Summary.CommitSHA != forced {
		t.Errorf("webhook run for the forced push %s: %s, mode %s, over %s; want it synced (or the run failed for Lambda to retry)",
			forced, res.Summary.Status, res.Summary.Mode, res.Summary.CommitSHA)
	}
}

// The production case of the lagging head (Cloudflare KV, reads up to a
// minute stale): push X, its webhook run syncs X; push Y seconds later, its
// run reads lastCommit from before X's run (stale) while GitHub still
// reports X. The head is not lastCommit, but it does not contain Y either:
// the run waits for Y instead of syncing X again.
func TestPush_WebhookRun_StaleLastCommitAndLaggingHead_WaitsForThePush(t *testing.T) {
	t.Parallel()
	r := newStaleRig(t)
	r.repo.Write("a/가.md", "# 가\n")
	r.repo.Commit("seed")
	if _, err := r.run(2 * time.Hour); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	r.repo.Write("a/나.md", "# 나\n")
	x := r.repo.Commit("push X")
	r.opt.Trigger, r.opt.After = syncer.TriggerWebhook, x
	if _, err := r.run(20 * time.Second); err != nil {
		t.Fatalf("webhook run of X: %v", err)
	}
	r.repo.Write("a/다.md", "# 다\n")
	y := r.repo.Commit("push Y")
	r.gh.FailNext(githubtest.KindCommitSHA, 2, githubtest.StaleHead(x))
	r.opt.After = y
	res, err := r.run(time.Hour)
	if err == nil && res.Summary.CommitSHA != y {
		t.Errorf("webhook run of Y: %s over %s (mode %s): Y is not synced, and nothing retries it before the daily run (%s)",
			res.Summary.Status, res.Summary.CommitSHA, res.Summary.Mode, r.headMismatch(y))
	}
}

// Two pushes X and Y; X's run already synced Y. Y's run reads the head
// from a replica that still has X: that head is behind lastCommit, but
// nothing was rewound. The run waits for Y, as for any head behind the
// push, instead of being refused as a rewind.
func TestPush_WebhookRun_LaggingHeadBehindLastCommit_WaitsNotARewind(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	r.repo.Write("c/하나.md", "# 하나\n")
	x := r.repo.Commit("push X")
	r.repo.Write("c/둘.md", "# 둘\n")
	y := r.repo.Commit("push Y")
	if res, err := r.run(syncer.Options{LeaseTTL: leased.LeaseTTL, Trigger: syncer.TriggerWebhook, After: x}); err != nil || res.Summary.CommitSHA != y {
		t.Fatalf("setup: X's run: %v, synced %s", err, res.Summary.CommitSHA)
	}
	r.gh.FailNext(githubtest.KindCommitSHA, 1, githubtest.StaleHead(x))
	res, err := r.run(syncer.Options{LeaseTTL: leased.LeaseTTL, Trigger: syncer.TriggerWebhook, After: y})
	if err != nil {
		t.Errorf("Y's run, head read as X for a moment: %s: %v", res.Summary.Status, err)
	}
}

// The same with the push event's "before" (the branch's commit before the
// forced push), which the receiver hands on: GitHub's view from before the
// push is that commit, and the run still waits for the push.
func TestPush_WebhookRun_ForcedPushNotYetVisible_BeforeKnown_WaitsForIt(t *testing.T) {
	t.Parallel()
	res, forced, old, err := forcedPushNotYetVisible(t, true)
	if err != nil || res.Summary.CommitSHA != forced {
		t.Errorf("webhook run for the forced push %s (before %s): %v, %s over %s; want it synced once GitHub shows it",
			forced, old, err, res.Summary.Status, res.Summary.CommitSHA)
	}
}

// Two forced pushes in a row (amended twice): the first push's run starts
// with the branch already at the second, on another line than either the
// first push or the commit before it. That head is news, not GitHub's view
// from before the push: the run syncs it. Review: the run waited 15 s for
// a head that would never come back and failed (exit 1), Lambda retried it
// minutes after the second push's run had succeeded, and lastRun said
// failed while the registry equalled the head.
func TestPush_WebhookRun_ForcedPushSupersededByALaterForcedPush_SyncsTheLaterOne(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	old, f1, f2 := twoForcedPushes(r)
	res, err := r.run(syncer.Options{LeaseTTL: leased.LeaseTTL, Trigger: syncer.TriggerWebhook, After: f1, Forced: true, Before: old})
	if err != nil || res.Summary.CommitSHA != f2 {
		t.Errorf("the first forced push's run with the branch at the second: %v (status %s, synced %s); want %s synced", err, res.Summary.Status, res.Summary.CommitSHA, f2)
	}
}

// forcedPushNotYetVisible runs a forced push's webhook run while GitHub
// reports the dropped commit as the head twice, the push's before given or
// not; it returns the run and the pushed and dropped commits.
func forcedPushNotYetVisible(t *testing.T, withBefore bool) (res syncer.Result, forced, old string, err error) {
	t.Helper()
	return forcedPushNotYetVisibleFor(t, newRig(t), 2, withBefore)
}

// forcedPushNotYetVisibleFor is forcedPushNotYetVisible with GitHub
// answering the dropped commit for the next stale head reads.
func forcedPushNotYetVisibleFor(t *testing.T, r *rig, stale int, withBefore bool) (res syncer.Result, forced, old string, err error) {
	t.Helper()
	base := r.seed()
	r.repo.Write("c/초안.md", "# 초안\n")
	old = r.repo.Commit("a commit the force push drops")
	r.mustRun()
	r.repo.Reset(base)
	r.repo.Write("c/새 규정.md", "# 새 규정\n")
	forced = r.repo.Commit("forced push")
	r.gh.FailNext(githubtest.KindCommitSHA, stale, githubtest.StaleHead(old))
	opt := syncer.Options{LeaseTTL: leased.LeaseTTL, Trigger: syncer.TriggerWebhook, After: forced, Forced: true}
	if withBefore {
		opt.Before = old
	}
	res, err = r.run(opt)
	return res, forced, old, err
}

// Two forced pushes in a row (X -> Y, then Y -> Z), each off base. The
// second push's run (before Y, after Z) starts while GitHub still shows
// the branch at X, the commit the registry holds: that is GitHub's view
// from before the push, and the run waits for Z, with "before" or without.
// Review: X is on another line than both Z and Y, so lagsPush called it "a
// later forced push" and the run synced X as news ("unchanged", success).
func TestPush_WebhookRun_ForcedPush_StaleViewIsTheRegistrysCommit_WaitsForThePush(t *testing.T) {
	t.Parallel()
	for _, withBefore := range []bool{false, true} {
		r := newRig(t)
		x, y, z := twoForcedPushes(r) // the registry holds x
		r.gh.FailNext(githubtest.KindCommitSHA, 2, githubtest.StaleHead(x))
		opt := syncer.Options{LeaseTTL: leased.LeaseTTL, Trigger: syncer.TriggerWebhook, After: z, Forced: true}
		if withBefore {
			opt.Before = y
		}
		res, err := r.run(opt)
		if err == nil && res.Summary.Status == policy.RunSuccess && res.Summary.CommitSHA != z {
			t.Errorf("before=%v: Z's run, GitHub briefly still at X (the registry's commit): %s, mode %s, synced %s; want Z synced (or the run failed for a retry)",
				withBefore, res.Summary.Status, res.Summary.Mode, res.Summary.CommitSHA[:7])
		}
	}
}

// twoForcedPushes syncs a commit (dropped) off the seed, then force-pushes
// the branch twice, each time to a new commit off the seed: the registry
// holds dropped, the branch is at second.
func twoForcedPushes(r *rig) (dropped, first, second string) {
	r.t.Helper()
	base := r.seed()
	r.repo.Write("c/초안.md", "# 초안\n")
	dropped = r.repo.Commit("a commit the force pushes drop")
	r.mustRun()
	r.repo.Reset(base)
	r.repo.Write("c/초안.md", "# 초안 1\n")
	first = r.repo.Commit("forced push 1")
	r.repo.Reset(base)
	r.repo.Write("c/초안.md", "# 초안 2\n")
	second = r.repo.Commit("forced push 2 (amended)")
	return dropped, first, second
}

// Three forced pushes: X (synced) -> Y -> Z -> X again (the last one resets
// the branch to exactly the registry's commit: a revert by force push).
// Z's run (before Y, after Z) starts with GitHub, correctly, at X, the
// registry's commit: from the head alone that is also GitHub's view from
// before the push (next test), so the run fails, saying both, and leaves
// the registry as it is; the third push's own run synced X. Review: it
// said only "GitHub has not caught up with the push", untrue here.
func TestPush_WebhookRun_LaterForcePushBackToTheRegistrysCommit_FailsSayingSo(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	x, y, z := twoForcedPushes(r) // the registry holds x
	r.repo.Reset(x)               // forced push 3: back to X
	if res, err := r.run(syncer.Options{LeaseTTL: leased.LeaseTTL, Trigger: syncer.TriggerWebhook, After: x, Forced: true, Before: z}); err != nil {
		t.Fatalf("push 3's run: %v (%s)", err, res.Summary.Status)
	}
	before := r.policies()
	_, err := r.run(syncer.Options{LeaseTTL: leased.LeaseTTL, Trigger: syncer.TriggerWebhook, After: z, Forced: true, Before: y})
	if !errors.Is(err, syncer.ErrPushNotSeen) || !strings.Contains(err.Error(), "put the branch back") {
		t.Errorf("push 2's run, the branch since force-pushed back to X (the registry's commit): %v; want ErrPushNotSeen naming a push back as a cause", err)
	}
	if diff := cmp.Diff(before, r.policies()); diff != "" {
		t.Errorf("the failed run changed the registry (-before +after):\n%s", diff)
	}
}

// A forced push GitHub shows only after more than the run's 15 s of
// re-reads: every read answers the registry's own commit, GitHub's view
// from before the push. The run fails for Lambda to retry; it never
// records success over a registry without the push (review: a version
// that took such a head for a push back to it did).
func TestPush_WebhookRun_ForcedPush_GitHubStaleLongerThanTheWait_Fails(t *testing.T) {
	t.Parallel()
	for _, withBefore := range []bool{false, true} {
		r := newRig(t)
		res, forced, old, err := forcedPushNotYetVisibleFor(t, r, 5, withBefore) // the first read and all four re-reads
		if !errors.Is(err, syncer.ErrPushNotSeen) || res.Summary.Status == policy.RunSuccess {
			t.Errorf("before=%v: forced push %s, GitHub at %s (the registry's commit) throughout: %v (status %s, synced %s); want ErrPushNotSeen",
				withBefore, forced[:7], old[:7], err, res.Summary.Status, res.Summary.CommitSHA)
		}
	}
}
