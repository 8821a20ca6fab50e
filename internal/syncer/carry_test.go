package syncer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/registrytest"
	"github.com/knue/syncjob/internal/syncer"
)

// A run's record replaces the last one's: what a run did not get far
// enough to learn — what waits for retry, whether the registry is clean —
// it carries from the last run, or the next run would trust a record that
// says less than the one it replaced.

// partialWithRetry leaves 가 failed once: queue:가 retryCount 1,
// lastRun.pending [가].
func partialWithRetry(t *testing.T, r *rig, opt syncer.Options) {
	t.Helper()
	r.seed()
	r.run(opt)
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Commit("edit")
	r.store.FailKeys(map[string]error{"policy:가": errors.New("boom")})
	r.run(opt)
	r.store.FailKeys(nil)
	if p := r.lastRun().Pending; !slices.Equal(p, []string{"가"}) || r.queueEntries()["가"].RetryCount != 1 {
		t.Fatalf("setup: pending %v, queue:가 %+v; want [가], retryCount 1", p, r.queueEntries()["가"])
	}
}

// wantRetried runs once more and checks that 가's failed write was retried.
func wantRetried(t *testing.T, r *rig, opt syncer.Options) {
	t.Helper()
	res, err := r.run(opt)
	if got := r.policies()["가"].Title; got != "가 개정" {
		t.Errorf("after a %s run (%v, mode %q) 가 = %q, want %q: the failed write waiting for retry (queue:가, retryCount %d) was forgotten",
			res.Summary.Status, err, res.Summary.Mode, got, "가 개정", r.queueEntries()["가"].RetryCount)
	}
}

// A run that cannot read the branch head never reads what waits for retry:
// it owes what the last run owed, not nothing.
func TestCarry_HeadUnreadable_RetryStillOwed(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	partialWithRetry(t, r, syncer.Options{})
	r.gh.FailNext(githubtest.KindCommitSHA, -1, githubtest.ServerError(502))
	if _, err := r.run(syncer.Options{}); err == nil {
		t.Fatal("run with the head unreadable succeeded")
	}
	r.gh.ClearFaults()
	if p := r.lastRun().Pending; !slices.Equal(p, []string{"가"}) {
		t.Errorf("pending %q after a run that never read it, want the last run's [가]", p)
	}
	wantRetried(t, r, syncer.Options{})
}

// A run that cannot read the registry's state knows neither what waits nor
// whether the registry is clean: its record says "unknown" (pending nil)
// and dirty, and the next run lists the queue and plans from the tree.
func TestCarry_StateUnreadable_RetryStillOwed(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	partialWithRetry(t, r, syncer.Options{})
	r.store.FailGet(errors.New("kv: 500"))
	if _, err := r.run(syncer.Options{}); err == nil {
		t.Fatal("run with the state unreadable succeeded")
	}
	r.store.FailGet(nil)
	if lr := r.lastRun(); lr.Pending != nil || !lr.Dirty {
		t.Errorf("pending %#v, dirty %v after a run that read no state; want nil (unknown), dirty", lr.Pending, lr.Dirty)
	}
	wantRetried(t, r, syncer.Options{})
}

// A retry the daily write budget leaves waiting is owed again, as one a
// deadline leaves (TestDeadline_StoppedRun_RetryLeftWaiting_KeepsItsCount).
func TestCarry_BudgetLeavesRetryWaiting_StillOwed(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.billed()
	hook := leased
	hook.Trigger = syncer.TriggerWebhook // no reconcile to plan it anyway
	partialWithRetry(t, r, hook)
	// the smallest budget a run takes: its fixed writes, and not the retry
	for b := int64(1); ; b++ {
		if b == 200 {
			t.Fatal("no budget under 200 let the run start")
		}
		r.clock.Advance(24 * time.Hour) // a day of its own
		o := withBudget(b)
		o.Trigger = syncer.TriggerWebhook
		res, err := r.run(o)
		if errors.Is(err, syncer.ErrBudget) {
			continue
		}
		if res.Summary.Waiting == 0 {
			t.Fatalf("budget %d: %v, nothing left waiting; want the retry left for another day", b, err)
		}
		break
	}
	if p := r.lastRun().Pending; !slices.Contains(p, "가") {
		t.Errorf("pending %q after the budget left 가's retry waiting, want it named", p)
	}
	wantRetried(t, r, hook)
}

// stoppedRepair has a full run find drift (every policy deleted by hand),
// repair half of it and stop for its deadline: the next run must be full.
func stoppedRepair(t *testing.T, r *rig) {
	t.Helper()
	seedMany(r, 12)
	r.mustRun()
	var keys []string
	for i := range 12 {
		keys = append(keys, fmt.Sprintf("policy:%02d", i))
	}
	if err := r.store.Delete(context.Background(), keys); err != nil {
		t.Fatal(err)
	}
	res, _ := r.runStopped(syncer.Options{Full: true})
	if !res.Summary.StoppedEarly || len(r.policies()) == 12 {
		t.Fatalf("setup: stopped early %v, %d policies; want a repair cut by the deadline", res.Summary.StoppedEarly, len(r.policies()))
	}
}

// wantFullRepair runs once more and checks that it planned from the tree.
func wantFullRepair(t *testing.T, r *rig) {
	t.Helper()
	res, err := r.run(syncer.Options{})
	if n := len(r.policies()); n != 12 || res.Summary.Mode != differ.ModeFull {
		t.Errorf("next run: %v, %s, mode %q; the registry holds %d of the head's 12", err, res.Summary.Status, res.Summary.Mode, n)
	}
}

// A run that fails before it plans, after one its deadline stopped, leaves
// the registry as unclean as it found it: the run after it is full.
func TestCarry_StoppedRepairThenHeadUnreadable_NextRunFull(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	stoppedRepair(t, r)
	r.gh.FailNext(githubtest.KindCommitSHA, -1, githubtest.ServerError(502))
	r.run(syncer.Options{})
	r.gh.ClearFaults()
	if !r.lastRun().Dirty {
		t.Error("the failed run after a stopped repair is not dirty")
	}
	wantFullRepair(t, r)
}

// So does a run refused before it plans (an operator's pinned head that
// moved on).
func TestCarry_StoppedRepairThenRefused_NextRunFull(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	stoppedRepair(t, r)
	if _, err := r.run(syncer.Options{ExpectHead: "0123456789012345678901234567890123456789"}); !errors.Is(err, syncer.ErrHeadMoved) {
		t.Fatalf("run pinned to another head: %v, want ErrHeadMoved", err)
	}
	wantFullRepair(t, r)
}

// A failed write's count survives a failed run and then a run its deadline
// stops: neither loses it from what is owed, so its next failure counts on.
func TestCarry_OutageThenStoppedRun_RetryKeepsItsCount(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	seedMany(r, 12)
	r.mustRun()
	r.repo.Write("규정/10.md", "# 규정 10 개정\n")
	r.repo.Commit("edit 10")
	r.store.FailKeys(map[string]error{"policy:10": errors.New("boom")})
	r.run(syncer.Options{})
	r.store.FailKeys(nil)
	r.gh.FailNext(githubtest.KindCommitSHA, -1, githubtest.ServerError(502))
	r.run(syncer.Options{})
	r.gh.ClearFaults()
	for i := range 10 {
		r.repo.Write(fmt.Sprintf("규정/%02d.md", i), fmt.Sprintf("# 규정 %d 개정\n", i))
	}
	r.repo.Commit("edit 0-9")
	r.runStopped(syncer.Options{})
	r.store.FailKeys(map[string]error{"policy:10": errors.New("boom")})
	r.run(syncer.Options{})
	if got := r.queueEntries()["10"].RetryCount; got != 2 {
		t.Errorf("queue:10 retryCount %d after its second failure, want 2", got)
	}
}

// A full run that found drift and left its repair for the write budget
// (another day) leaves the next run full, as one its deadline stopped: a
// compare from the unchanged lastCommit does not name that drift, and the
// next run would otherwise find nothing to do and report success.
func TestCarry_BudgetLeavesRepairWaiting_NextRunFull(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.billed()
	seedMany(r, 12)
	if _, err := r.run(leased); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i := range 12 {
		keys = append(keys, fmt.Sprintf("policy:%02d", i))
	}
	if err := r.store.Delete(context.Background(), keys); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(9 * time.Hour) // a new budget day
	for b := int64(1); ; b++ {
		if b == 400 {
			t.Fatal("no budget under 400 let the full run start")
		}
		o := withBudget(b)
		o.Full = true
		res, err := r.s.Run(context.Background(), o)
		if errors.Is(err, syncer.ErrBudget) {
			continue
		}
		if res.Summary.Waiting == 0 || len(r.policies()) == 12 {
			t.Fatalf("budget %d: %v, waiting %d, %d policies; want the repair left waiting", b, err, res.Summary.Waiting, len(r.policies()))
		}
		break
	}
	r.clock.Advance(time.Hour)
	wantFullRepair(t, r)
}

// budgetCutOne runs (webhook trigger) with the smallest daily budget that
// writes some but not all of the plan, a day apart each try.
func budgetCutOne(t *testing.T, run func(syncer.Options) (syncer.Result, error), clockAdvance func(), base syncer.Options) {
	t.Helper()
	for b := int64(1); b < 200; b++ {
		clockAdvance()
		o := base
		o.DailyWriteBudget = b
		res, err := run(o)
		if errors.Is(err, syncer.ErrBudget) || res.Summary.Updated == 0 {
			continue
		}
		if res.Summary.Waiting == 0 {
			t.Fatalf("budget %d: nothing waits", b)
		}
		return
	}
	t.Fatal("no budget under 200 wrote one update and left one waiting")
}

// An incremental run cut by the write budget publishes some of its head and
// keeps lastCommit; the push is then undone by a force-push back to
// lastCommit. The next run must be full: head == lastCommit and nothing
// pending said unchanged, success, with the budget's half-push in the
// registry (review).
func TestCarry_BudgetLeavesAnIncrementalWaiting_ForcePushBack_NextRunFull(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.billed()
	hook := leased
	hook.Trigger = syncer.TriggerWebhook
	base := r.seed()
	if _, err := r.run(hook); err != nil {
		t.Fatal(err)
	}
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Write("a/나.md", "# 나 개정\n")
	r.repo.Commit("edit both")
	budgetCutOne(t, r.run, func() { r.clock.Advance(24 * time.Hour) }, hook)
	if lc := r.lastCommit(); lc != base {
		t.Fatalf("setup: lastCommit %s, want %s", lc, base)
	}
	r.repo.Reset(base) // force-push back
	for i := range 2 {
		r.clock.Advance(24 * time.Hour)
		res, err := r.run(hook)
		if p := r.policies(); err == nil && (p["가"].Title != "가" || p["나"].Title != "나") {
			t.Errorf("run %d: %s (mode %q), registry 가 %q 나 %q; head has 가, 나", i+1, res.Summary.Status, res.Summary.Mode, p["가"].Title, p["나"].Title)
		}
	}
}

// billedLag is a registry as Cloudflare's: reads lag, writes are billed.
type billedLag struct{ *billingStore }

func (billedLag) EventuallyConsistent() bool { return true }

// The same without a force-push, on a Cloudflare-like registry: a later
// commit reverts 가 and the range passes the 100 commits read one by one,
// so no name is distrusted and the aggregate compare does not name 가;
// only a full run sees it.
func TestCarry_BudgetLeavesAnIncrementalWaiting_RevertPastTheCommitCap_NextRunFull(t *testing.T) {
	t.Parallel()
	r := newStaleRig(t)
	r.s.Registry = registry.New(billedLag{&billingStore{Store: r.lag}})
	r.opt.Trigger = syncer.TriggerWebhook
	r.repo.Write("a/가.md", "# 가\n")
	r.repo.Write("a/나.md", "# 나\n")
	r.repo.Write("b/다.md", "# 다\n")
	r.repo.Commit("seed")
	if _, err := r.run(2 * time.Hour); err != nil {
		t.Fatal(err)
	}
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Write("a/나.md", "# 나 개정\n")
	r.repo.Commit("edit both")
	run := func(o syncer.Options) (syncer.Result, error) {
		res, err := r.s.Run(context.Background(), o)
		r.clock.Advance(2 * time.Hour)
		return res, err
	}
	budgetCutOne(t, run, func() { r.clock.Advance(24 * time.Hour) }, r.opt)
	if all, _, _ := r.truth.Policies(context.Background()); all["가"].Title != "가 개정" {
		t.Fatalf("setup: the budget did not write 가 first (items go in name order)")
	}
	r.repo.Write("a/가.md", "# 가\n")
	r.repo.Commit("revert 가")
	head := r.repo.EmptyCommits(100, "empty")
	r.clock.Advance(24 * time.Hour)
	for i := range 2 {
		res, err := r.run(time.Hour)
		if diff := r.headMismatch(head); diff != "" && err == nil {
			t.Errorf("run %d: %s (mode %q) while %s", i+1, res.Summary.Status, res.Summary.Mode, diff)
		}
	}
}

// On a registry whose reads lag, a run seconds after another may read the
// record from before it: a run that stops before its reads settle
// (stale.go) carries an older record's list of what waits for retry, and
// must not leave the next run trusting it (soak seed 10648: a failed lease
// write recorded pending [] over [가], and the next run ended success with
// 가's failed write never retried). Its record names a lastCommit other
// than the stored one: the next run plans from the head tree.
func TestCarry_LaggingRegistry_RunFailsBeforeItsReadsSettle_RetryNotForgotten(t *testing.T) {
	t.Parallel()
	r, faulty := faultyStaleRig(t)
	r.repo.Write("a/가.md", "# 가\n")
	r.repo.Commit("seed")
	if _, err := r.run(2 * time.Hour); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	r.repo.Write("a/가.md", "# 가 개정\n")
	head := r.repo.Commit("edit")
	faulty.FailKeys(map[string]error{"policy:가": errors.New("boom")})
	if res, _ := r.run(5 * time.Second); !slices.Equal(res.Summary.Pending, []string{"가"}) {
		t.Fatalf("setup: pending %q, want [가]", res.Summary.Pending)
	}
	faulty.FailKeys(nil)
	failNextPut(faulty) // the lease
	if _, err := r.run(2 * time.Minute); err == nil {
		t.Fatal("run with the lease write failing succeeded")
	}
	wantNextRunRetries(t, r, head)
}

// faultyStaleRig is newStaleRig with faults injected in its lagging store.
func faultyStaleRig(t *testing.T) (*staleRig, *registrytest.Faulty) {
	r := newStaleRig(t)
	faulty := registrytest.NewFaulty(r.lag)
	r.s.Registry = registry.New(faulty)
	return r, faulty
}

// failNextPut makes the store's next put (a run's lease) fail.
func failNextPut(f *registrytest.Faulty) {
	f.FailCall(registrytest.Put, f.Calls(registrytest.Put)+1, errors.New("kv: 500"))
}

// wantNextRunRetries runs once more and checks the registry is the head's.
func wantNextRunRetries(t *testing.T, r *staleRig, head string) {
	t.Helper()
	res, err := r.run(time.Hour)
	if diff := r.headMismatch(head); diff != "" {
		t.Fatalf("the run after (%s, %v, mode %q: %q) left %s: the failed write waiting for retry was forgotten",
			res.Summary.Status, err, res.Summary.Mode, res.Summary.ModeReason, diff)
	}
}

// The same at an unchanged head: a full run repairs 가 and that write
// fails (partial, pending [가]; lastCommit stays), and the operator's
// second full run, seconds later, reads the record from before it and
// fails at its lease, recording pending [] over it. Its record names the
// stored lastCommit, so the next run is not made full; it lists the queue,
// where the hidden run recorded the failure (review).
func TestCarry_LaggingRegistry_FailedRunReplacesAFullRunsRecordAtTheSameHead_RetryNotForgotten(t *testing.T) {
	t.Parallel()
	r, faulty := faultyStaleRig(t)
	r.repo.Write("a/가.md", "# 가\n")
	r.repo.Write("a/나.md", "# 나\n")
	head := r.repo.Commit("seed")
	if _, err := r.run(2 * time.Hour); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	if errs := registry.New(r.lag).Write(context.Background(), registry.DeletePolicy("가")); errs != nil {
		t.Fatal(errs) // drift a full run repairs
	}
	r.clock.Advance(2 * time.Hour)
	faulty.FailKeys(map[string]error{"policy:가": errors.New("boom")})
	full := r.opt
	full.Full = true
	if res, _ := r.s.Run(context.Background(), full); !slices.Equal(res.Summary.Pending, []string{"가"}) {
		t.Fatalf("setup: pending %q, want [가]", res.Summary.Pending)
	}
	r.clock.Advance(5 * time.Second)
	faulty.FailKeys(nil)
	failNextPut(faulty) // the lease
	if res, err := r.s.Run(context.Background(), full); err == nil || res.Summary.Mode != "" {
		t.Fatalf("the operator's second full run, its lease write failing: %v, mode %q; want a failure before planning", err, res.Summary.Mode)
	}
	r.clock.Advance(2 * time.Minute)
	wantNextRunRetries(t, r, head)
}

// A failed move is owed by name only (no queue entry records it). A run
// that fails before planning carries it; the next run, which lists the
// queue after such a record, still revisits the names the record carried.
func TestCarry_FailedMoveThenHeadUnreadable_MoveStillRetried(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	r.repo.Move("a/가.md", "c/가.md")
	r.repo.Write("a/나.md", "# 나 개정\n") // lands: the run is partial, not an outage
	head := r.repo.Commit("move")
	r.store.FailKeys(map[string]error{"policy:가": errors.New("boom")})
	res, _ := r.run(syncer.Options{})
	r.store.FailKeys(nil)
	if !slices.Equal(res.Summary.Pending, []string{"가"}) {
		t.Fatalf("setup: pending %q, want [가] (%s, %+v, changes %+v)", res.Summary.Pending, res.Summary.Status, res.Summary.Failures, res.Plan.Items)
	}
	r.gh.FailNext(githubtest.KindCommitSHA, -1, githubtest.ServerError(502))
	if _, err := r.run(syncer.Options{}); err == nil {
		t.Fatal("run with the head unreadable succeeded")
	}
	r.gh.ClearFaults()
	res, err := r.run(syncer.Options{})
	if got := r.policies()["가"].Path; got != "c/가.md" {
		t.Errorf("after a %s run (%v, mode %q) 가 is at %q, want c/가.md (head %s): the failed move was forgotten",
			res.Summary.Status, err, res.Summary.Mode, got, head[:7])
	}
}

// A dead letter dropped after a run that failed before planning: the next
// run, which lists the queue after such a record, still finds the name
// released and plans it again (review: it reported it held back by a dead
// letter that no longer existed, and told the operator to retry it).
func TestCarry_DeadLetterDroppedAfterHeadUnreadable_NameReplanned(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Write("a/나.md", "# 나 개정\n")
	r.repo.Commit("edit")
	failUntilDeadLetter(t, r, "가")
	r.gh.FailNext(githubtest.KindCommitSHA, -1, githubtest.ServerError(502))
	if _, err := r.run(syncer.Options{}); err == nil {
		t.Fatal("run with the head unreadable succeeded")
	}
	r.gh.ClearFaults()
	if err := r.reg.DropDeadLetter(context.Background(), "가"); err != nil {
		t.Fatal(err)
	}
	res, err := r.run(syncer.Options{})
	if got := r.policies()["가"].Title; got != "가 개정" || len(res.Summary.HeldBack) > 0 {
		t.Errorf("after a %s run (%v, mode %q) 가 = %q, held back %v; want 가 개정, none held back: the dropped dead letter's name was not planned again",
			res.Summary.Status, err, res.Summary.Mode, got, res.Summary.HeldBack)
	}
}

// The same when the run that failed read the state from before the drop
// (a read that lagged): its record does not carry the drop's request to
// retry, only the name held back, whose dead letter is gone.
func TestCarry_LaggingRegistry_DeadLetterDroppedUnderAFailingRun_NameReplanned(t *testing.T) {
	t.Parallel()
	r, faulty := faultyStaleRig(t)
	r.repo.Write("a/가.md", "# 가\n")
	r.repo.Write("a/나.md", "# 나\n")
	r.repo.Commit("seed")
	if _, err := r.run(2 * time.Hour); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Write("a/나.md", "# 나 개정\n")
	head := r.repo.Commit("edit")
	faulty.FailKeys(map[string]error{"policy:가": errors.New("kv down")})
	for range 3 {
		_, _ = r.run(2 * time.Hour)
	}
	faulty.FailKeys(nil)
	if err := r.s.Registry.DropDeadLetter(context.Background(), "가"); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(5 * time.Second)
	r.gh.FailNext(githubtest.KindCommitSHA, -1, githubtest.ServerError(502))
	if _, err := r.run(2 * time.Minute); err == nil {
		t.Fatal("run with the head unreadable succeeded")
	}
	r.gh.ClearFaults()
	wantNextRunRetries(t, r, head)
}
