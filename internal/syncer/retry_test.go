package syncer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/queue"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/registrytest"
	"github.com/knue/syncjob/internal/syncer"
)

func (r *rig) queueEntries() map[string]policy.QueueEntry {
	r.t.Helper()
	q, err := r.reg.Queue(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	return q
}

func (r *rig) deadLetters() map[string]policy.DeadLetter {
	r.t.Helper()
	d, err := r.reg.DeadLetters(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	return d
}

func TestRetry_WriteFailsOnce_RetriedNextRunAndLands(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Write("a/나.md", "# 나 개정\n")
	r.repo.Remove("b/다.md")
	head := r.repo.Commit("edit two, delete one")
	r.store.FailKeys(map[string]error{"policy:가": errors.New("boom"), "policy:다": errors.New("bang")})
	res, err := r.run(syncer.Options{})
	if !errors.Is(err, syncer.ErrPartial) || !strings.Contains(err.Error(), "가") || !strings.Contains(err.Error(), "다") {
		t.Fatalf("err = %v, want ErrPartial naming 가 and 다", err)
	}
	if res.Summary.Status != policy.RunPartial || res.Summary.ErrorCount != 2 || res.Summary.Updated != 1 {
		t.Errorf("summary = %+v", res.Summary)
	}
	if r.lastCommit() != head {
		t.Errorf("lastCommit %s, want %s: every failure is recorded", r.lastCommit(), head)
	}
	q := r.queueEntries()
	if e := q["가"]; e.RetryCount != 1 || e.ErrorMessage == nil || !strings.Contains(*e.ErrorMessage, "boom") || e.Operation != policy.OpUpdate {
		t.Errorf("queue:가 = %+v", e)
	}
	if e := q["다"]; e.RetryCount != 1 || e.Operation != policy.OpDelete {
		t.Errorf("queue:다 = %+v", e)
	}
	if p := r.policies(); p["나"].Title != "나 개정" || p["가"].Title != "가" {
		t.Errorf("one failure stopped others or landed: 가=%q 나=%q", p["가"].Title, p["나"].Title)
	}

	// No commit touches them; the next run retries both and they land.
	r.store.FailKeys(nil)
	r.gh.ResetRequests()
	res = r.mustRun()
	if res.Summary.Mode != differ.ModeIncremental || res.Summary.ModeReason != "retry" || res.Summary.Status != policy.RunSuccess {
		t.Errorf("retry run: %+v", res.Summary)
	}
	p := r.policies()
	if _, gone := p["다"]; gone || p["가"].Title != "가 개정" {
		t.Errorf("retries did not land: %v", p)
	}
	q = r.queueEntries()
	if e := q["가"]; e.RetryCount != 0 || e.ErrorMessage != nil || e.SHA != p["가"].SHA {
		t.Errorf("queue:가 not clean after success: %+v", e)
	}
	if _, ok := q["다"]; ok {
		t.Error("queue:다 left after the delete landed")
	}
	// head, tree (retries are planned from the head), one blob
	if got := r.gh.Requests().Total(); got != 3 {
		t.Errorf("github requests of the retry run %d, want 3", got)
	}
	if res := r.mustRun(); res.Summary.Mode != differ.ModeUnchanged {
		t.Errorf("after the retries: mode %s, want unchanged", res.Summary.Mode)
	}
}

func TestRetry_FailsThreeTimes_DeadLetterOthersUnaffected(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Write("a/나.md", "# 나 개정\n")
	r.repo.Commit("edit")
	r.store.FailKeys(map[string]error{"policy:가": errors.New("kv down")})
	for i := 1; i <= 3; i++ {
		if _, err := r.run(syncer.Options{}); !errors.Is(err, syncer.ErrPartial) {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	if _, ok := r.queueEntries()["가"]; ok {
		t.Error("queue:가 still there after 3 failures")
	}
	dl, ok := r.deadLetters()["가"]
	if !ok || dl.RetryCount != 3 || !strings.Contains(dl.Reason, "kv down") || dl.DeadAt == "" {
		t.Fatalf("dead-letter:가 = %+v (present %v)", dl, ok)
	}
	if p := r.policies(); p["나"].Title != "나 개정" {
		t.Errorf("other policy affected: %+v", p["나"])
	}
	// Later runs stop retrying it, and say that it is held back.
	r.store.FailKeys(nil)
	if res, err := r.run(syncer.Options{}); !errors.Is(err, syncer.ErrPartial) || res.Summary.Mode != differ.ModeUnchanged ||
		len(res.Summary.HeldBack) != 1 || res.Summary.HeldBack[0].PolicyName != "가" {
		t.Errorf("run after the dead letter: %v, mode %s, held back %v; want unchanged, partial, naming 가", err, res.Summary.Mode, res.Summary.HeldBack)
	}
	// A full run holds the dead letter's version back too, and says so: a
	// run is partial while a dead letter holds back a version the head wants.
	res, err := r.run(syncer.Options{Full: true})
	if !errors.Is(err, syncer.ErrPartial) || !strings.Contains(err.Error(), "가") || res.Summary.Updated != 0 ||
		len(res.Summary.HeldBack) != 1 || res.Summary.HeldBack[0].PolicyName != "가" || res.Summary.Status != policy.RunPartial {
		t.Errorf("full run: %v, %+v", err, res.Summary)
	}
	if p := r.policies(); p["가"].Title != "가" {
		t.Errorf("dead-lettered version written by a full run: %+v", p["가"])
	}

	// Retried by hand ("syncjob deadletter retry 가"), it lands, although
	// the head has not moved.
	if err := r.reg.RetryDeadLetter(context.Background(), "가", r.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if res := r.mustRun(); res.Summary.Mode != differ.ModeIncremental || res.Summary.ModeReason != "retry" {
		t.Errorf("after the retry by hand: mode %s (%s), want an incremental retry", res.Summary.Mode, res.Summary.ModeReason)
	}
	if p := r.policies(); p["가"].Title != "가 개정" {
		t.Errorf("retried dead letter did not land: %+v", p["가"])
	}
	if q := r.queueEntries()["가"]; q.ErrorMessage != nil || q.RetryCount != 0 {
		t.Errorf("queue:가 after the manual retry = %+v", q)
	}
}

func TestRetry_NewVersionOfDeadLetter_GoesAhead(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	r.repo.Write("a/가.md", "# 가 v2\n")
	r.repo.Commit("v2")
	r.store.FailKeys(map[string]error{"policy:가": errors.New("kv down")})
	for range 3 {
		_, _ = r.run(syncer.Options{})
	}
	if _, ok := r.deadLetters()["가"]; !ok {
		t.Fatal("no dead letter")
	}
	r.store.FailKeys(nil)
	r.repo.Write("a/가.md", "# 가 v3\n")
	r.repo.Commit("v3")
	r.mustRun()
	if p := r.policies(); p["가"].Title != "가 v3" {
		t.Errorf("a new version was held back: %+v", p["가"])
	}
	if _, ok := r.deadLetters()["가"]; ok {
		t.Error("the old version's dead letter outlived the new version")
	}
}

func TestRetry_DeletedFromRepoWhileQueued_NotResurrected(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	r.repo.Write("c/라.md", "# 라\n")
	r.repo.Write("c/마.md", "# 마\n")
	r.repo.Commit("add")
	restore := r.failReads("c/라.md")
	if _, err := r.run(syncer.Options{}); !errors.Is(err, syncer.ErrPartial) {
		t.Fatalf("err = %v", err)
	}
	if q := r.queueEntries()["라"]; q.ErrorMessage == nil || q.Operation != policy.OpAdd {
		t.Fatalf("queue:라 = %+v", q)
	}
	restore()
	r.repo.Remove("c/라.md")
	r.repo.Commit("never mind")
	r.mustRun()
	if _, ok := r.policies()["라"]; ok {
		t.Error("a policy deleted while queued was resurrected")
	}
	if _, ok := r.queueEntries()["라"]; ok {
		t.Error("its queue entry is still there")
	}
}

func TestRetry_RecordingFails_RunFailedLastCommitStays_NextRunRepairs(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	first := r.seed()
	r.mustRun()
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Write("a/나.md", "# 나 개정\n")
	head := r.repo.Commit("edit")
	r.store.FailKeys(map[string]error{"policy:가": errors.New("boom"), "queue:가": errors.New("boom too")})
	res, err := r.run(syncer.Options{})
	if !errors.Is(err, syncer.ErrItemsFailed) || res.Summary.Status != policy.RunFailed {
		t.Fatalf("err %v, status %s; want a failed run", err, res.Summary.Status)
	}
	if r.lastCommit() != first || r.lastRun().Status != policy.RunFailed {
		t.Errorf("lastCommit %s (want %s), lastRun %+v", r.lastCommit(), first, r.lastRun())
	}
	r.store.FailKeys(nil)
	r.mustRun()
	p := r.policies()
	if p["가"].Title != "가 개정" || p["나"].Title != "나 개정" || r.lastCommit() != head {
		t.Errorf("next clean run did not repair: %v, lastCommit %s", p, r.lastCommit())
	}
	if q := r.queueEntries()["가"]; q.ErrorMessage != nil || q.SHA != p["가"].SHA {
		t.Errorf("queue:가 = %+v", q)
	}
}

func TestRetry_WorkerFailuresAreNotTheSyncs(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	// a worker takes an entry and fails it, under the queue's rules
	taken, ok := r.queueEntries()["가"]
	if !ok {
		t.Fatalf("take: no queue entry for 가 in %v", r.queueEntries())
	}
	next, dead := queue.Failed(taken, errors.New("indexer down").Error(), r.clock.Now())
	if errs := r.reg.Write(context.Background(), registry.PutQueue(next)); errs != nil || dead != nil {
		t.Fatal(errs, dead)
	}
	if res := r.mustRun(); res.Summary.Mode != differ.ModeUnchanged {
		t.Errorf("a worker's failure made the sync work: mode %s", res.Summary.Mode)
	}
}

func TestRunHistory_NewestFirstAndExpires(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.seed()
	for range 3 {
		r.mustRun()
	}
	runs, err := r.reg.Runs(context.Background(), 0)
	if err != nil || len(runs) != 3 {
		t.Fatalf("runs %d, %v", len(runs), err)
	}
	for i, want := range []string{"run003", "run002", "run001"} {
		if runs[i].RunID != want {
			t.Errorf("runs[%d] = %s, want %s (newest first)", i, runs[i].RunID, want)
		}
	}
	r.clock.Advance(90*24*time.Hour - 150*time.Minute) // run001 is now just over 90 days old, run002 just under
	runs, _ = r.reg.Runs(context.Background(), 0)
	if len(runs) != 2 || runs[1].RunID != "run002" {
		t.Errorf("after 90 days: %d runs, want run001 expired", len(runs))
	}
}

func TestGuard_EmptyTree_Refused(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	first := r.seed()
	r.mustRun()
	r.repo.Remove("a")
	r.repo.Remove("b")
	r.repo.Write("other.txt", "x")
	r.repo.Commit("oops")
	if _, err := r.run(syncer.Options{}); !errors.Is(err, differ.ErrRefused) {
		t.Fatalf("err = %v, want ErrRefused", err)
	}
	if len(r.policies()) != 3 || r.lastCommit() != first {
		t.Errorf("refused plan wrote: %d policies, lastCommit %s", len(r.policies()), r.lastCommit())
	}
	if _, err := r.run(syncer.Options{AllowMassDelete: true}); err != nil {
		t.Fatalf("allowed: %v", err)
	}
	if len(r.policies()) != 0 {
		t.Error("allowed plan did not delete")
	}
}

func TestGuard_ManyLost_RefusedButRenamingEverythingPasses(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for i := range 40 {
		r.repo.Write(fmt.Sprintf("p/%02d.md", i), fmt.Sprintf("# %d\n", i))
	}
	r.repo.Commit("40")
	r.mustRun()
	for i := range 40 {
		r.repo.Move(fmt.Sprintf("p/%02d.md", i), fmt.Sprintf("p/규정 %02d.md", i))
	}
	r.repo.Commit("rename every file")
	if res, err := r.run(syncer.Options{}); err != nil || res.Summary.Added != 40 || res.Summary.Deleted != 40 {
		t.Fatalf("renaming everything: %v %+v", err, res.Summary)
	}
	for i := range 11 {
		r.repo.Remove(fmt.Sprintf("p/규정 %02d.md", i))
	}
	r.repo.Commit("repeal 11 of 40")
	if _, err := r.run(syncer.Options{}); !errors.Is(err, differ.ErrRefused) {
		t.Fatalf("11 of 40 lost: err = %v, want ErrRefused", err)
	}
	if len(r.policies()) != 40 {
		t.Errorf("%d policies after a refused plan", len(r.policies()))
	}
}

func TestLease_HeldByAnotherRun_Refused_ExpiredTaken_ReleasedAfter(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	first := r.seed()
	opt := syncer.Options{LeaseTTL: 15 * time.Minute}
	now := r.clock.Now()
	r.putRaw(map[string]string{registry.LeaseKey: fmt.Sprintf(`{"owner":"backfill","acquiredAt":%q,"expiresAt":%q}`,
		now.Format(time.RFC3339), now.Add(30*time.Minute).Format(time.RFC3339))})
	if _, err := r.run(opt); !errors.Is(err, registry.ErrLeaseHeld) || !strings.Contains(err.Error(), "backfill") {
		t.Fatalf("err = %v, want ErrLeaseHeld naming the holder", err)
	}
	if len(r.policies()) != 0 || r.lastCommit() != "" {
		t.Errorf("a run without the lease wrote: %d policies, lastCommit %q", len(r.policies()), r.lastCommit())
	}
	// The holder's lastRun is left alone; the refused run is in the history.
	if lr, _ := r.reg.LastRun(context.Background()); lr != nil {
		t.Errorf("the refused run replaced lastRun: %+v", lr)
	}
	if runs, _ := r.reg.Runs(context.Background(), 1); len(runs) != 1 || runs[0].Status != policy.RunRefused || !strings.Contains(runs[0].Error, "lease") {
		t.Errorf("history = %+v", runs)
	}
	r.clock.Advance(time.Hour) // the holder's lease expired
	if _, err := r.run(opt); err != nil {
		t.Fatalf("expired lease: %v", err)
	}
	if r.lastCommit() != first {
		t.Errorf("lastCommit %s", r.lastCommit())
	}
	if _, err := r.store.Get(context.Background(), registry.LeaseKey); !errors.Is(err, policy.ErrNotFound) {
		t.Errorf("lease not released: %v", err)
	}
	// A retry of the same Lambda invocation takes over the lease its
	// crashed try left behind.
	r.putRaw(map[string]string{registry.LeaseKey: fmt.Sprintf(`{"owner":"req-1","acquiredAt":%q,"expiresAt":%q}`,
		r.clock.Now().Format(time.RFC3339), r.clock.Now().Add(5*time.Minute).Format(time.RFC3339))})
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Commit("edit")
	if _, err := r.run(syncer.Options{LeaseTTL: 15 * time.Minute, LeaseOwner: "req-1"}); err != nil {
		t.Errorf("same owner: %v", err)
	}
}

func TestBudget_FirstSyncSpreadsOverDays_InAStableOrder(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.seed()
	billed := &billingStore{Store: r.store}
	r.s.Registry = registry.New(billed)
	// A run's own writes: the lease taken and released, history, lastRun,
	// lastCommit = 5, and the two reservations of its writes (budget.go) =
	// 7; each policy 2 (entry and queue entry). With 12 a day, 2 of the 3
	// policies fit (7 + 4); the third waits for tomorrow.
	res, err := r.run(syncer.Options{DailyWriteBudget: 12})
	if !errors.Is(err, syncer.ErrPartial) || !strings.Contains(err.Error(), "1 changes wait") {
		t.Fatalf("err = %v, want partial with one change waiting", err)
	}
	if res.Summary.Waiting != 1 || res.Summary.Added != 2 || res.Summary.Planned == nil || res.Summary.Planned.Added != 3 {
		t.Errorf("summary %+v (planned %+v)", res.Summary, res.Summary.Planned)
	}
	p := r.policies()
	if _, ok := p["가"]; !ok || len(p) != 2 {
		t.Fatalf("policies %v: want the first two by name", p)
	}
	if r.lastCommit() != "" {
		t.Errorf("lastCommit %q advanced past changes still waiting", r.lastCommit())
	}
	// The rest of the day's budget cannot record a run: refused, nothing written.
	if _, err := r.run(syncer.Options{DailyWriteBudget: 12}); !errors.Is(err, syncer.ErrBudget) || !errors.Is(err, differ.ErrRefused) {
		t.Fatalf("same day: %v, want ErrBudget", err)
	}
	r.clock.Advance(24 * time.Hour) // a new UTC day
	res, err = r.run(syncer.Options{DailyWriteBudget: 12})
	if err != nil || res.Summary.Added != 1 || res.Summary.Waiting != 0 {
		t.Fatalf("next day: %v, %+v", err, res.Summary)
	}
	if len(r.policies()) != 3 || r.lastCommit() == "" {
		t.Errorf("after two days: %d policies, lastCommit %q", len(r.policies()), r.lastCommit())
	}
	if res.Summary.BillableWrites != 2+7 {
		t.Errorf("billable writes %d, want 9", res.Summary.BillableWrites)
	}
}

// billingStore counts writes as Cloudflare bills them: each pair written.
type billingStore struct {
	registry.Store
	writes, deletes atomic.Int64
}

func (b *billingStore) Put(ctx context.Context, pairs []registry.Pair) map[string]error {
	errs := b.Store.Put(ctx, pairs)
	b.writes.Add(int64(len(pairs) - len(errs)))
	return errs
}

func (b *billingStore) Delete(ctx context.Context, keys []string) map[string]error {
	errs := b.Store.Delete(ctx, keys)
	b.deletes.Add(int64(len(keys) - len(errs)))
	return errs
}

func (b *billingStore) Usage() registry.Usage {
	u := b.Store.Usage()
	u.Billing, u.Writes, u.Deletes = true, b.writes.Load(), b.deletes.Load()
	return u
}

// editFailing syncs the seed, edits 가 and runs n times with policy:가's
// writes failing (each run partial); the failure stays armed.
func editFailing(t *testing.T, n int) *rig {
	t.Helper()
	r := syncedRig(t)
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Commit("edit")
	r.store.FailKeys(map[string]error{"policy:가": errors.New("kv down")})
	for i := 1; i <= n; i++ {
		if _, err := r.run(syncer.Options{}); !errors.Is(err, syncer.ErrPartial) {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	return r
}

// When the dead letter of a third failure cannot be written, the queue
// entry records the count: the next failure makes the dead letter (review:
// the entry was deleted in the same write, the count restarted at one,
// and a policy could fail forever without becoming a dead letter).
func TestRetry_DeadLetterWriteFails_QueueEntryKeepsItsCount(t *testing.T) {
	t.Parallel()
	r := editFailing(t, 2)
	if q := r.queueEntries()["가"]; q.RetryCount != 2 {
		t.Fatalf("queue:가 after two failures = %+v", q)
	}
	r.store.FailKeys(map[string]error{"policy:가": errors.New("kv down"), "dead-letter:가": errors.New("dead letter refused")})
	if _, err := r.run(syncer.Options{}); err == nil {
		t.Fatal("run 3 succeeded; want it failed recording the dead letter")
	}
	if q, queued := r.queueEntries()["가"]; !queued || q.RetryCount != 3 {
		t.Errorf("after the dead letter failed: queue:가 = %+v (present %t), want the third failure counted", q, queued)
	}
	if runs, _ := r.reg.Runs(context.Background(), 1); len(runs) != 1 || slices.ContainsFunc(runs[0].HeldBack, func(s policy.Skip) bool { return s.PolicyName == "가" }) {
		t.Errorf("run 3's record says 가 is held back although its dead letter was not written: %+v", runs)
	}
	r.store.FailKeys(map[string]error{"policy:가": errors.New("kv down")})
	_, _ = r.run(syncer.Options{})
	if _, dead := r.deadLetters()["가"]; !dead {
		t.Errorf("after four failures still no dead letter: queue:가 = %+v", r.queueEntries()["가"])
	}
}

// A name whose dead-letter: key would pass the 512-byte key limit (a
// registry entry another writer left: the head's names are held to fit)
// is never given up on: its failures stay owed, and no run fails as a
// whole over it (review: the third failure's dead letter broke the key
// limit and failed the run).
func TestRetry_NameTooLongForADeadLetter_StaysOwed_NoRunFails(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	name := strings.Repeat("가", 168) + "a" // 505 bytes: fits policy: and queue:, not dead-letter:
	r.putRaw(map[string]string{"policy:" + name: `{"policyName":"` + name + `","title":"긴 이름","status":"active","lastUpdated":"2026-11-01T00:00:00Z","sha":"0123456789abcdef0123456789abcdef01234567","path":"규정/` + name + `.md"}`})
	r.store.FailKeys(map[string]error{"policy:" + name: errors.New("kv down")})
	for i := 1; i <= 4; i++ {
		res, err := r.run(syncer.Options{Full: true})
		if !errors.Is(err, syncer.ErrPartial) {
			t.Errorf("run %d: %s, %v; want partial, the delete owed", i, res.Summary.Status, err)
		}
	}
	if q := r.queueEntries()[name]; q.RetryCount != 4 {
		t.Errorf("queue entry of the long name = %+v, want 4 failures counted", q)
	}
}

// A sync within the consistency window of a person's "deadletter retry"
// reads the dead letter and lastRun.pending from before it, holds the
// version back again and records over the request. The runs after it find
// the dead letter gone and retry the version (review: they said "held
// back" of a dead letter that no longer existed until the daily reconcile).
func TestRetry_SyncWithinTheWindowOfARetryByHand_VersionLandsNext(t *testing.T) {
	t.Parallel()
	r := editFailing(t, 3)
	if _, ok := r.deadLetters()["가"]; !ok {
		t.Fatal("setup: no dead letter")
	}
	r.store.FailKeys(nil)
	lagged := registry.New(registrytest.NewLagging(r.store, r.clock.Now, time.Minute))
	r.s.Registry = lagged
	if _, err := lagged.RetryDeadLetters(context.Background(), []string{"가"}, r.clock.Now()); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(10 * time.Second)
	if _, err := r.s.Run(context.Background(), syncer.Options{}); !errors.Is(err, syncer.ErrPartial) {
		t.Fatalf("the run within the window: %v, want partial (it still sees the dead letter)", err)
	}
	r.clock.Advance(5 * time.Minute)
	res, err := r.s.Run(context.Background(), syncer.Options{})
	if err != nil || r.policies()["가"].Title != "가 개정" {
		t.Errorf("the run after: %v (mode %s %s), 가 = %q; want the retried version landed", err, res.Summary.Mode, res.Summary.ModeReason, r.policies()["가"].Title)
	}
}

// A run records the owner it takes the lease as, so that status --check
// can tell its own expired lease (the release lost) from the next run's
// (that run never recorded its end) when a Lambda request id owns it; a
// run that takes none (unchanged, or leases off) records it too.
func TestLease_RecordNamesItsOwner(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.seed()
	for _, c := range []struct {
		name string
		opt  syncer.Options
		want func(policy.RunSummary) string
	}{
		{"lambda", syncer.Options{LeaseTTL: 15 * time.Minute, LeaseOwner: "lambda req-1"}, func(policy.RunSummary) string { return "lambda req-1" }},
		{"cli", syncer.Options{LeaseTTL: 15 * time.Minute}, func(s policy.RunSummary) string { return s.RunID }},
		{"leases off", syncer.Options{}, func(s policy.RunSummary) string { return s.RunID }},
		{"unchanged", syncer.Options{LeaseTTL: 15 * time.Minute, LeaseOwner: "lambda req-2"}, func(policy.RunSummary) string { return "lambda req-2" }},
	} {
		if c.name != "unchanged" {
			r.repo.Write("a/가.md", "# 가 "+c.name+"\n")
			r.repo.Commit(c.name)
		}
		res, err := r.run(c.opt)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		lr, _ := r.reg.LastRun(context.Background())
		if (res.Summary.Mode == differ.ModeUnchanged) != (c.name == "unchanged") {
			t.Fatalf("%s: mode %s", c.name, res.Summary.Mode)
		}
		if want := c.want(res.Summary); lr == nil || lr.LeaseOwner != want || res.Summary.LeaseOwner != want {
			t.Errorf("%s: lastRun %+v, summary's leaseOwner %q, want %q", c.name, lr, res.Summary.LeaseOwner, want)
		}
	}
}
