package syncer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/registrytest"
	"github.com/knue/syncjob/internal/syncer"
)

// leased runs take the lease, as every real run does (cmd/syncjob sets it).
var leased = syncer.Options{LeaseTTL: 3 * time.Minute}

// mustConverge runs clean and checks the registry holds exactly the head's
// policies, by name and sha.
func (r *rig) mustConverge(head string) syncer.Result {
	r.t.Helper()
	res, err := r.run(leased)
	if err != nil {
		r.t.Fatalf("clean run: %v", err)
	}
	want := map[string]string{}
	for path := range r.repo.Files(head) {
		if policy.IsPolicyPath(path) {
			want[policy.NameOf(path)] = r.repo.BlobSHA(head, path)
		}
	}
	got := map[string]string{}
	for name, e := range r.policies() {
		got[name] = e.SHA
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		r.t.Fatalf("registry %v, head %v", got, want)
	}
	return res
}

func TestConverge_LastCommitLost_DeletedThenRestored_NotLost(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	r.repo.Remove("a/가.md")
	r.repo.Commit("delete 가")
	r.store.FailKeys(map[string]error{registry.LastCommitKey: errors.New("refused")})
	if _, err := r.run(leased); !errors.Is(err, syncer.ErrNotRecorded) {
		t.Fatalf("lastCommit refused: %v", err)
	}
	r.store.FailKeys(nil)
	r.repo.Write("a/가.md", "# 가\n")
	head := r.repo.Commit("restore 가")
	res := r.mustConverge(head)
	if res.Summary.Mode != differ.ModeFull || res.Summary.ModeReason == "" {
		t.Errorf("after a lost lastCommit: mode %s (%s), want full", res.Summary.Mode, res.Summary.ModeReason)
	}
}

// A record that failed in part (lastCommit refused after lastRun landed,
// the history key, or lastRun) ends the run failed: what landed must say
// so, not keep the success it was written with.
func TestConverge_RecordFails_WhatLandedSaysFailed(t *testing.T) {
	t.Parallel()
	for _, failed := range []string{"lastCommit", "history", "lastRun"} {
		t.Run(failed, func(t *testing.T) {
			r := newRig(t)
			r.seed()
			first := r.mustRun()
			r.repo.Write("b/라.md", "# 라\n")
			r.repo.Commit("add 라")
			key := map[string]string{"lastCommit": registry.LastCommitKey, "history": registry.RunKey(r.clock.Now(), "run002"), "lastRun": registry.LastRunKey}[failed]
			r.store.FailKeys(map[string]error{key: errors.New("refused")})
			calls := len(r.store.Log())
			res, err := r.run(leased)
			r.store.FailKeys(nil)
			if !errors.Is(err, syncer.ErrNotRecorded) || res.Summary.Status != policy.RunFailed {
				t.Fatalf("run: %s, %v; want failed, ErrNotRecorded", res.Summary.Status, err)
			}
			if failed == "lastRun" { // refused again: the history says what lastRun cannot
				if h, err := r.reg.RunByID(context.Background(), "run002"); err != nil || h.Status != policy.RunFailed {
					t.Errorf("run002's history: %s, %v; want failed", h.Status, err)
				}
			} else if last := r.lastRun(); last.RunID != "run002" || last.Status != policy.RunFailed || !strings.Contains(last.Error, "refused") {
				t.Errorf("lastRun: %s %s (%q), want run002 failed, naming the refused write", last.RunID, last.Status, last.Error)
			} else if !last.Dirty || last.LastSuccess != first.Summary.Timestamp {
				t.Errorf("lastRun: dirty %v, last success %s; want dirty (it wrote), the last success run001's (%s)", last.Dirty, last.LastSuccess, first.Summary.Timestamp)
			}
			// released once lastRun says how the run ended, never twice (another
			// run may hold the lease by then); while lastRun cannot say it, the
			// lease left behind tells the next run
			wantReleased, wantWrites := failed != "lastRun", map[bool]int{true: 2, false: 1}[failed != "lastRun"]
			if l, err := r.reg.Lease(context.Background()); err != nil || (l == nil || l.Released()) != wantReleased {
				t.Errorf("lease after the run: %+v, %v; want released %v", l, err, wantReleased) // a released lease lives a minute
			}
			leaseWrites := 0
			for _, c := range r.store.Log()[calls:] {
				if c.Method == registrytest.Put && slices.Contains(c.Keys, registry.LeaseKey) {
					leaseWrites++
				}
			}
			if leaseWrites != wantWrites {
				t.Errorf("the lease was written %d times, want %d", leaseWrites, wantWrites)
			}
		})
	}
}

func TestConverge_LastCommitLost_AddedThenDeleted_NoGhost(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	r.repo.Write("c/유령.md", "# 유령\n")
	r.repo.Commit("add")
	r.store.FailKeys(map[string]error{registry.LastCommitKey: errors.New("refused")})
	_, _ = r.run(leased)
	r.store.FailKeys(nil)
	r.repo.Remove("c/유령.md")
	r.mustConverge(r.repo.Commit("delete"))
}

func TestConverge_KilledAfterDelete_NextRunPlansFromTheHeadTree(t *testing.T) {
	t.Parallel()
	for _, at := range []int{1, 2, 3, 4} { // after the lease, the deletes, ...
		t.Run(fmt.Sprintf("killed after %d writes", at), func(t *testing.T) {
			r := newRig(t)
			r.seed()
			r.mustRun()
			r.repo.Remove("a/가.md")
			r.repo.Write("b/라.md", "# 라\n")
			r.repo.Commit("delete 가, add 라")
			r.store.Kill(at)
			_, _ = r.run(leased)
			r.store.Revive()
			r.repo.Write("a/가.md", "# 가\n")
			r.repo.Remove("b/라.md")
			head := r.repo.Commit("undo both")
			r.clock.Advance(leased.LeaseTTL) // the killed run's lease expires
			r.mustConverge(head)
		})
	}
}

func TestConverge_EveryWriteRefusedThreeRuns_OutageNotDeadLetters(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.repo.Write("a/가.md", "# 가\n")
	r.repo.Write("a/나.md", "# 나\n")
	head := r.repo.Commit("seed")
	refused := map[string]error{}
	for _, k := range []string{"policy:가", "policy:나", "queue:가", "queue:나"} {
		refused[k] = errors.New("kv incident")
	}
	r.store.FailKeys(refused)
	for i := 0; i < 3; i++ {
		res, err := r.run(leased)
		if !errors.Is(err, syncer.ErrOutage) || res.Summary.Status != policy.RunFailed {
			t.Fatalf("run %d: %v (%s), want an outage", i, err, res.Summary.Status)
		}
	}
	if d, _ := r.reg.DeadLetters(context.Background()); len(d) != 0 {
		t.Fatalf("an outage made dead letters: %v", d)
	}
	r.store.FailKeys(nil)
	r.mustConverge(head)
}

func TestConverge_LambdaRetriesOfOneInvocation_CountOneFailure(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Write("a/나.md", "# 나 개정\n")
	r.repo.Commit("edit")
	r.store.FailKeys(map[string]error{"policy:가": errors.New("refused")})
	opt := leased
	opt.LeaseOwner = "lambda req-1"
	for i := 0; i < 3; i++ { // the invocation and Lambda's two retries of it
		if _, err := r.run(opt); !errors.Is(err, syncer.ErrPartial) {
			t.Fatalf("try %d: %v", i, err)
		}
	}
	q := r.queueEntries()["가"]
	if q.RetryCount != 1 || q.AttemptID != "lambda req-1" {
		t.Fatalf("queue:가 after one invocation = %+v, want one failure", q)
	}
	if d, _ := r.reg.DeadLetters(context.Background()); len(d) != 0 {
		t.Fatalf("one invocation made a dead letter: %v", d)
	}
	opt.LeaseOwner = "lambda req-2"
	_, _ = r.run(opt)
	if q := r.queueEntries()["가"]; q.RetryCount != 2 {
		t.Fatalf("the next invocation: %+v, want two failures", q)
	}
}

func TestConverge_AnnounceBeforePublish_NoUpdateWithoutItsQueueEntry(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Write("a/나.md", "# 나 개정\n")
	head := r.repo.Commit("edit")
	before := r.policies()["가"]
	r.store.FailKeys(map[string]error{"queue:가": errors.New("refused")})
	start := len(r.store.Log())
	if _, err := r.run(leased); err == nil {
		t.Fatal("a refused announcement must fail its item")
	}
	if got := r.policies()["가"]; got.SHA != before.SHA {
		t.Fatalf("policy:가 was published (%s) although its announcement was refused", got.SHA)
	}
	// Every queue write lands before any policy write.
	lastQueue, firstPolicy := -1, -1
	for i, c := range r.store.Log()[start:] {
		for _, k := range c.Keys {
			switch {
			case c.Method == "Put" && k == "queue:나":
				lastQueue = i
			case c.Method == "Put" && k == "policy:나" && firstPolicy < 0:
				firstPolicy = i
			}
		}
	}
	if lastQueue < 0 || firstPolicy < 0 || lastQueue > firstPolicy {
		t.Errorf("queue:나 written at call %d, policy:나 at %d: the announcement must come first", lastQueue, firstPolicy)
	}
	r.store.FailKeys(nil)
	r.mustConverge(head)
}

func TestConverge_KilledBetweenAnnounceAndPublish_Published(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	r.repo.Write("a/가.md", "# 가 개정\n")
	head := r.repo.Commit("edit")
	r.store.Kill(2) // the lease, the announcement; the publication never lands
	_, _ = r.run(leased)
	r.store.Revive()
	if q, e := r.queueEntries()["가"], r.policies()["가"]; q.SHA == e.SHA || q.SHA != r.repo.BlobSHA(head, "a/가.md") {
		t.Fatalf("after the kill: queue %+v, policy %+v: want the announcement only", q, e)
	}
	r.clock.Advance(leased.LeaseTTL)
	r.mustConverge(head)
	if q := r.queueEntries()["가"]; q.SHA != r.policies()["가"].SHA {
		t.Errorf("queue:가 %+v does not announce the published version", q)
	}
}

func TestConverge_LeaseRenewedWhileTheRunLasts(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.seed()
	slow := &slowSource{Source: r.s.Source, delay: 300 * time.Millisecond}
	r.s.Source = slow
	opt := syncer.Options{LeaseTTL: 60 * time.Millisecond} // renewed every 20 ms
	if _, err := r.run(opt); err != nil {
		t.Fatal(err)
	}
	if n := countPuts(r.store.Log(), registry.LeaseKey); n < 4 {
		t.Errorf("the lease was written %d times in a 300 ms run with a 60 ms TTL; want taken, renewed, released", n)
	}
}

func TestConverge_LeaseLost_RunStopsWriting(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.seed()
	slow := &slowSource{Source: r.s.Source, delay: 300 * time.Millisecond}
	r.s.Source = slow
	slow.before = func() {
		r.store.FailKeys(map[string]error{registry.LeaseKey: errors.New("refused")})
		r.clock.Advance(time.Hour) // renewals fail until the lease has expired
	}
	res, err := r.run(syncer.Options{LeaseTTL: 60 * time.Millisecond})
	if !errors.Is(err, syncer.ErrLeaseLost) || res.Summary.Status != policy.RunFailed {
		t.Fatalf("err = %v (%s), want ErrLeaseLost", err, res.Summary.Status)
	}
	if n := len(r.policies()); n != 0 {
		t.Errorf("a run that lost its lease wrote %d policies", n)
	}
}

// takenOverSource is a Source whose title read outlasts the run's lease:
// renewals are refused until the lease has expired, the run is cancelled
// (ErrLeaseLost), and another run takes the lease before this one records.
// With read, it then reads the titles whole (a read that does not watch
// the context): every write the run sends fails on its cancelled context,
// which apply reports as an outage (ErrOutage), not as the context's end.
type takenOverSource struct {
	syncer.Source
	r    *rig
	read bool
}

func (s takenOverSource) Titles(ctx context.Context, commit string, files []policy.File, maxSize int64) (map[string]policy.Content, map[string]error, error) {
	s.r.store.FailKeys(map[string]error{registry.LeaseKey: errors.New("refused")})
	s.r.clock.Advance(time.Hour)
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		return nil, nil, errors.New("the lease was never lost")
	}
	s.r.store.FailKeys(nil)
	if _, err := s.r.reg.TakeLease(context.Background(), nil, "the next run", s.r.clock.Now(), 15*time.Minute); err != nil {
		return nil, nil, err
	}
	if s.read {
		return s.Source.Titles(context.Background(), commit, files, maxSize)
	}
	return nil, nil, ctx.Err()
}

// nextHoldersLeaseLeft fails the test unless the lease is still the one
// takenOverSource took for "the next run", held.
func (r *rig) nextHoldersLeaseLeft() {
	r.t.Helper()
	l, err := r.reg.Lease(context.Background())
	if err != nil || l == nil {
		r.t.Fatalf("lease %v, %v", l, err)
	}
	if l.Owner != "the next run" || l.Released() {
		r.t.Errorf("the lease is %+v after the run that lost it recorded; want the next run's, held", *l)
	}
}

// A run that lost its lease records its end without releasing the lease:
// another run may hold it by then, and a release (KV has no compare-and-
// swap) would mark that run's live lease released, letting a third run
// start beside it (review). Its dirty lastRun makes the next run full.
func TestConverge_LeaseLost_RecordLeavesTheNextHoldersLease(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.seed()
	r.s.Source = takenOverSource{Source: r.s.Source, r: r}
	res, err := r.s.Run(context.Background(), syncer.Options{LeaseTTL: 60 * time.Millisecond})
	if !errors.Is(err, syncer.ErrLeaseLost) || res.Summary.Status != policy.RunFailed {
		t.Fatalf("err = %v (%s), want ErrLeaseLost", err, res.Summary.Status)
	}
	r.nextHoldersLeaseLeft()
}

// A run that lost its lease never releases it, whatever error its steps
// return: here its writes all fail on the cancelled context and apply says
// "outage", which stopped() tied to the lost lease only for a context
// error (review).
func TestConverge_LeaseLost_WritesFailAsAnOutage_NextHoldersLeaseLeft(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.seed()
	r.s.Source = takenOverSource{Source: r.s.Source, r: r, read: true}
	res, err := r.s.Run(context.Background(), syncer.Options{LeaseTTL: 60 * time.Millisecond})
	t.Logf("run: %v (%s)", err, res.Summary.Status)
	r.nextHoldersLeaseLeft()
}

func TestGuard_RenameEveryPolicyAndEditEach_Passes(t *testing.T) {
	t.Parallel()
	for _, full := range []bool{false, true} {
		t.Run(fmt.Sprintf("full=%v", full), func(t *testing.T) {
			r := newRig(t)
			for i := 0; i < 20; i++ {
				r.repo.Write(fmt.Sprintf("1-2-%d.md", i), fmt.Sprintf("# 규정 %d\n\n제1조 목적\n제2조 정의\n제3조 적용\n", i))
			}
			r.repo.Commit("numbered files")
			r.mustRun()
			for i := 0; i < 20; i++ {
				r.repo.Remove(fmt.Sprintf("1-2-%d.md", i))
				r.repo.Write(fmt.Sprintf("규정/규정 %d.md", i), fmt.Sprintf("# 규정 %d\n\n제1조 목적\n제2조 정의\n제3조 적용 (개정)\n", i))
			}
			head := r.repo.Commit("files named by their titles, each edited")
			res, err := r.run(syncer.Options{Full: full})
			if err != nil {
				t.Fatalf("renaming and editing every policy: %v", err)
			}
			if res.Summary.Added != 20 || res.Summary.Deleted != 20 {
				t.Errorf("summary %+v", res.Summary)
			}
			r.mustConverge(head)
		})
	}
}

// slowSource delays reading contents, calling before first.
type slowSource struct {
	syncer.Source
	delay  time.Duration
	before func()
}

func (s *slowSource) Titles(ctx context.Context, commit string, files []policy.File, maxSize int64) (map[string]policy.Content, map[string]error, error) {
	if s.before != nil {
		s.before()
	}
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	return s.Source.Titles(ctx, commit, files, maxSize)
}

func countPuts(log []registrytest.Call, key string) int {
	n := 0
	for _, c := range log {
		for _, k := range c.Keys {
			if c.Method == "Put" && k == key {
				n++
			}
		}
	}
	return n
}

func TestReport_RefusedRun_CountsNothingApplied_PlanKeptApart(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for i := 0; i < 20; i++ {
		r.repo.Write(fmt.Sprintf("p/규정 %02d.md", i), fmt.Sprintf("# 규정 %d\n", i))
	}
	r.repo.Commit("20 policies")
	r.mustRun()
	for i := 0; i < 15; i++ {
		r.repo.Remove(fmt.Sprintf("p/규정 %02d.md", i))
	}
	r.repo.Commit("repeal 15")
	res, err := r.run(syncer.Options{})
	if !errors.Is(err, differ.ErrRefused) {
		t.Fatalf("err = %v", err)
	}
	for _, s := range []policy.RunSummary{res.Summary, r.lastRun()} {
		if s.Deleted != 0 || s.TotalProcessed != 0 || s.Planned == nil || s.Planned.Deleted != 15 || s.Status != policy.RunRefused {
			t.Errorf("refused run recorded %+v (planned %+v): want nothing applied, 15 deletes planned", s, s.Planned)
		}
	}
}

func TestReport_SummaryLine_NamesFailedSkippedHeldBack_NoEmptyError(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	var logs bytes.Buffer
	r.s.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	r.seed()
	r.repo.Write("a/빈 파일.md", "")
	for i := 0; i < 25; i++ {
		r.repo.Write(fmt.Sprintf("c/규정 %02d.md", i), fmt.Sprintf("# 규정 %d\n", i))
	}
	r.repo.Commit("more")
	failing := map[string]error{}
	for i := 0; i < 25; i++ {
		failing[fmt.Sprintf("policy:규정 %02d", i)] = errors.New("refused")
	}
	r.store.FailKeys(failing)
	if _, err := r.run(syncer.Options{}); !errors.Is(err, syncer.ErrPartial) {
		t.Fatalf("err = %v", err)
	}
	line := lastLine(t, &logs, "run finished")
	if _, ok := line["error"]; ok {
		t.Errorf("a partial run logs an empty error: %v", line["error"])
	}
	failed, _ := line["failedPolicies"].([]any)
	if len(failed) != 21 || failed[0] != "규정 00" || failed[20] != "… and 5 more" {
		t.Errorf("failedPolicies = %v, want the first 20 and a count", failed)
	}
	if skipped, _ := line["skippedPolicies"].([]any); len(skipped) != 1 || skipped[0] != "빈 파일" {
		t.Errorf("skippedPolicies = %v", line["skippedPolicies"])
	}
	r.store.FailKeys(nil)
	logs.Reset()
	r.mustRun()
	if line := lastLine(t, &logs, "run finished"); line["error"] != nil || line["failedPolicies"] != nil {
		t.Errorf("a successful run's line: %v", line)
	}
}

// lastLine returns the last JSON log line with msg.
func lastLine(t *testing.T, logs *bytes.Buffer, msg string) map[string]any {
	t.Helper()
	var found map[string]any
	for _, l := range strings.Split(logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == msg {
			found = m
		}
	}
	if found == nil {
		t.Fatalf("no %q line in:\n%s", msg, logs.String())
	}
	return found
}

func TestIncremental_ReadsOnlyTheEntriesItTouches(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Commit("edit")
	start := len(r.store.Log())
	res := r.mustRun()
	if res.Summary.Mode != differ.ModeIncremental || res.Summary.Policies != 3 {
		t.Fatalf("summary %+v", res.Summary)
	}
	for _, c := range r.store.Log()[start:] {
		if c.Method == registrytest.List && c.Prefix != registry.DeadLetterPrefix {
			t.Errorf("an incremental run after a clean one listed %q", c.Prefix)
		}
	}
	if p := r.policies(); p["가"].Title != "가 개정" || len(p) != 3 {
		t.Errorf("policies %v", p)
	}
}

func TestConverge_LiveLeaseOfAnotherRun_NotMistakenForACrash(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	if _, err := r.reg.TakeLease(context.Background(), nil, "backfill", r.clock.Now(), time.Hour); err != nil {
		t.Fatal(err)
	}
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Commit("edit")
	res, err := r.run(leased)
	if !errors.Is(err, registry.ErrLeaseHeld) {
		t.Fatalf("err = %v, want ErrLeaseHeld", err)
	}
	if res.Summary.Dirty || res.Summary.Mode == differ.ModeFull {
		t.Errorf("a run refused by a live lease recorded %+v: the holder is alive, nothing was left half-written", res.Summary)
	}
}

// renewalWaits is a store whose lease renewals wait (as in Cloudflare's
// full rate window) until past the expiry they set.
type renewalWaits struct {
	registry.Store
	clock *registrytest.Clock
	puts  atomic.Int32
}

func (s *renewalWaits) Put(ctx context.Context, pairs []registry.Pair) map[string]error {
	for _, p := range pairs {
		if p.Key == registry.LeaseKey && s.puts.Add(1) > 1 { // not the taking
			s.clock.Advance(time.Hour)
		}
	}
	return s.Store.Put(ctx, pairs)
}

func TestConverge_RenewalThatLandsExpired_StopsTheRun(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.seed()
	r.s.Registry = registry.New(&renewalWaits{Store: r.store, clock: r.clock})
	r.s.Source = &slowSource{Source: r.s.Source, delay: 300 * time.Millisecond}
	res, err := r.run(syncer.Options{LeaseTTL: 60 * time.Millisecond})
	if !errors.Is(err, syncer.ErrLeaseLost) || res.Summary.Status != policy.RunFailed {
		t.Fatalf("err = %v (%s), want ErrLeaseLost: the renewal landed after the lease had expired", err, res.Summary.Status)
	}
	if n := len(r.policies()); n != 0 {
		t.Errorf("a run that lost its lease wrote %d policies", n)
	}
}

// A webhook run reads the head GitHub reports; for a moment after a push
// that can be the branch as it was before. The run waits for the push
// instead of ending "unchanged" without it.
func TestConverge_WebhookRun_HeadNotYetThePush_WaitsForIt(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	old := r.seed()
	r.mustRun()
	r.repo.Write("c/새 규정.md", "# 새 규정\n")
	pushed := r.repo.Commit("push")
	r.gh.ResetRequests()
	r.gh.FailNext(githubtest.KindCommitSHA, 2, githubtest.StaleHead(old))
	res, err := r.run(syncer.Options{LeaseTTL: leased.LeaseTTL, Trigger: syncer.TriggerWebhook, After: pushed})
	if err != nil {
		t.Fatalf("webhook run: %v", err)
	}
	if res.Summary.CommitSHA != pushed || res.Summary.Added != 1 || r.lastCommit() != pushed {
		t.Errorf("webhook run synced %s (%d added), lastCommit %s; want the pushed %s", res.Summary.CommitSHA, res.Summary.Added, r.lastCommit(), pushed)
	}
	if got := r.gh.Requests(); got[githubtest.KindCommitSHA] != 3 || got[githubtest.KindCompare] != 2 {
		t.Errorf("%d head and %d compare requests, want 3 (two stale answers, then the push) and 2 (is the stale head behind the push; the incremental run's)", got[githubtest.KindCommitSHA], got[githubtest.KindCompare])
	}
}

// A head that already holds the pushed commit is synced at once: an old
// push redelivered, or events that arrive out of order.
func TestConverge_WebhookRun_HeadPastThePush_NoWait(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	first := r.seed()
	r.repo.Write("c/새 규정.md", "# 새 규정\n")
	r.repo.Commit("a later push")
	r.mustRun()
	r.gh.ResetRequests()
	res, err := r.run(syncer.Options{LeaseTTL: leased.LeaseTTL, Trigger: syncer.TriggerWebhook, After: first})
	if err != nil || res.Summary.Mode != differ.ModeUnchanged {
		t.Fatalf("redelivered old push: mode %s, err %v; want unchanged", res.Summary.Mode, err)
	}
	if got := r.gh.Requests(); got[githubtest.KindCommitSHA] != 1 || got[githubtest.KindCompare] != 1 {
		t.Errorf("%d head and %d compare requests, want 1 and 1", got[githubtest.KindCommitSHA], got[githubtest.KindCompare])
	}
}

// A head that never becomes the push fails the run (Lambda retries it) and
// writes nothing; a head past the push, or another one, is synced at once.
func TestConverge_WebhookRun_HeadNeverThePush_FailsWithoutWaitingForOtherHeads(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	old := r.seed()
	r.mustRun()
	r.repo.Write("c/새 규정.md", "# 새 규정\n")
	pushed := r.repo.Commit("push")
	webhook := syncer.Options{LeaseTTL: leased.LeaseTTL, Trigger: syncer.TriggerWebhook, After: pushed}
	r.gh.ResetRequests()
	r.gh.FailNext(githubtest.KindCommitSHA, -1, githubtest.StaleHead(old))
	res, err := r.run(webhook)
	if !errors.Is(err, syncer.ErrPushNotSeen) || res.Summary.Status != policy.RunFailed || !strings.Contains(err.Error(), pushed) || !strings.Contains(err.Error(), "after 15s") {
		t.Fatalf("head never the push: status %s, err %v; want failed with ErrPushNotSeen naming %s", res.Summary.Status, err, pushed)
	}
	if got := r.gh.Requests()[githubtest.KindCommitSHA]; got != 5 {
		t.Errorf("%d head requests, want 5 (the first and four more)", got)
	}
	if r.lastCommit() != old {
		t.Errorf("lastCommit %s after a run that did not see the push, want %s", r.lastCommit(), old)
	}
	// A later push moved the branch on: the run syncs it without waiting.
	r.gh.ClearFaults()
	r.gh.ResetRequests()
	r.repo.Write("c/다음 규정.md", "# 다음 규정\n")
	later := r.repo.Commit("later push")
	if res, err = r.run(webhook); err != nil || res.Summary.CommitSHA != later {
		t.Fatalf("head past the push: synced %s, err %v; want %s", res.Summary.CommitSHA, err, later)
	}
	if got := r.gh.Requests()[githubtest.KindCommitSHA]; got != 1 {
		t.Errorf("%d head requests for a head past the push, want 1", got)
	}
	// Runs started by hand or on schedule never wait.
	r.gh.ResetRequests()
	if res, err = r.run(syncer.Options{LeaseTTL: leased.LeaseTTL}); err != nil || res.Summary.Mode != differ.ModeUnchanged {
		t.Fatalf("run without a pushed commit: mode %s, err %v", res.Summary.Mode, err)
	}
	if got := r.gh.Requests()[githubtest.KindCommitSHA]; got != 1 {
		t.Errorf("%d head requests for a run without a pushed commit, want 1", got)
	}
}
