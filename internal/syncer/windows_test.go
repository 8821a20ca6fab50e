package syncer_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
	"github.com/knue/syncjob/internal/syncer"
)

// windowedRig is a cfRig of n policies, two files giving one name (a
// conflict) and an empty file (a skip).
func windowedRig(t *testing.T, n int) *cfRig {
	t.Helper()
	r := newCFRig(t, n, nil)
	r.repo.Write("규정/00/정책 0003.md", "# 정책 3\n\n본문 3\n") // beside 규정/03/정책 0003.md: a conflict
	r.repo.Write("규정/빈 정책.md", "")
	r.head = r.repo.Commit("a conflict and an empty file")
	return r
}

// registryValues are the rig's policy: keys and their values.
func (r *cfRig) registryValues() map[string]string {
	out := map[string]string{}
	for _, k := range r.cf.Keys() {
		if strings.HasPrefix(k, registry.PolicyPrefix) || strings.HasPrefix(k, registry.QueuePrefix) {
			v, _, _ := r.cf.Value(k)
			out[k] = string(v)
		}
	}
	return out
}

// TestWindows_FirstSync_SameRegistryAndSummaryAsWhole: a first sync of 150
// policies in windows of at most 40 lists the tree once a window, writes
// every policy once, and leaves the registry and the summary a whole
// first sync leaves: the same entries, counts, skips and conflicts, the
// first 100 changes by name; its plan holds those 100 and counts the rest.
func TestWindows_FirstSync_SameRegistryAndSummaryAsWhole(t *testing.T) {
	t.Parallel()
	const n = 150
	whole, windowed := windowedRig(t, n), windowedRig(t, n)
	wantRes, err := whole.run(t.Context(), syncer.Options{BatchSize: 20})
	if err != nil {
		t.Fatalf("whole: %v", err)
	}
	if trees := whole.gh.Requests()[githubtest.KindTree]; trees != 1 {
		t.Fatalf("whole: %d tree listings, want 1", trees)
	}
	res, err := windowed.run(t.Context(), syncer.Options{BatchSize: 20, FirstSyncWindow: 40})
	if err != nil {
		t.Fatalf("windowed: %v", err)
	}
	sum, want := res.Summary, wantRes.Summary
	if trees := windowed.gh.Requests()[githubtest.KindTree]; trees < 4 || trees > 8 {
		t.Errorf("windowed: %d tree listings, want one a window (4 to 8 windows of 150 at 40)", trees)
	}
	if sum.Status != policy.RunSuccess || sum.Added != n || sum.Added != want.Added || sum.Unchanged != want.Unchanged || sum.Policies != want.Policies {
		t.Errorf("windowed: %s, %d added, %d unchanged, %d policies; whole: %s, %d, %d, %d", sum.Status, sum.Added, sum.Unchanged, sum.Policies, want.Status, want.Added, want.Unchanged, want.Policies)
	}
	if !slices.Equal(sum.Changes, want.Changes) || sum.ChangesOmitted != want.ChangesOmitted || len(sum.Changes) != policy.MaxRunChanges {
		t.Errorf("windowed changes: %d listed, %d omitted; whole: %d, %d (or they differ)", len(sum.Changes), sum.ChangesOmitted, len(want.Changes), want.ChangesOmitted)
	}
	if !slices.Equal(sum.Skipped, want.Skipped) || len(sum.Skipped) != 1 {
		t.Errorf("skipped: windowed %v, whole %v", sum.Skipped, want.Skipped)
	}
	if len(sum.Conflicts) != 1 || len(want.Conflicts) != 1 || sum.Conflicts[0].Winner != want.Conflicts[0].Winner || !slices.Equal(sum.Conflicts[0].Losers, want.Conflicts[0].Losers) {
		t.Errorf("conflicts: windowed %v, whole %v", sum.Conflicts, want.Conflicts)
	}
	if got := res.Plan.Counts(); got != wantRes.Plan.Counts() || len(res.Plan.Items) != policy.MaxRunChanges || res.Plan.Omitted == nil || res.Plan.Omitted.Added != n-policy.MaxRunChanges {
		t.Errorf("windowed plan: %d items, counts %+v (omitted %+v); whole %+v", len(res.Plan.Items), got, res.Plan.Omitted, wantRes.Plan.Counts())
	}
	got, wantValues := windowed.registryValues(), whole.registryValues()
	if len(got) != len(wantValues) {
		t.Errorf("windowed registry: %d policy and queue keys, whole %d", len(got), len(wantValues))
	}
	for k, v := range wantValues {
		if got[k] != v {
			t.Errorf("%s: windowed %q, whole %q", k, got[k], v)
		}
	}
	// the records agree but for what a run's own identity and cost are
	if diff := recordDiff(t, windowed.lastRun(), whole.lastRun()); diff != "" {
		t.Errorf("lastRun differs from a whole first sync's: %s", diff)
	}
	checkWrittenOnce(t, windowed.bulk.landings(), n, 1)
	checkAnnouncedFirst(t, windowed.bulk.landings())
	// and the next run is incremental, reading only what it touches
	windowed.repo.Write("규정/새 정책.md", "# 새 정책\n")
	windowed.head = windowed.repo.Commit("add one")
	windowed.cf.ResetCounts()
	res, err = windowed.run(t.Context(), syncer.Options{BatchSize: 20, FirstSyncWindow: 40})
	if err != nil || res.Summary.Mode != "incremental" || res.Summary.Added != 1 || windowed.cf.Requests(cloudflaretest.List) != 0 {
		t.Errorf("next run: %v, %s mode, %d added, %d listings; want incremental, 1 added, no listing", err, res.Summary.Mode, res.Summary.Added, windowed.cf.Requests(cloudflaretest.List))
	}
}

// recordDiff says how two recorded run summaries differ, leaving out what
// two runs never share: their ids, timings and requests, and the fields
// named in ignore.
func recordDiff(t *testing.T, a, b policy.RunSummary, ignore ...string) string {
	t.Helper()
	strip := func(sum policy.RunSummary) map[string]any {
		raw, err := json.Marshal(sum)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range append([]string{"runId", "leaseOwner", "timestamp", "durationMs", "phasesMs", "requests", "billableWrites", "billableDeletes", "lastSuccess", "lastFullRun"}, ignore...) {
			delete(m, k)
		}
		return m
	}
	ma, mb := strip(a), strip(b)
	var out []string
	for k := range mb {
		if ja, jb := fmt.Sprint(ma[k]), fmt.Sprint(mb[k]); ja != jb {
			out = append(out, fmt.Sprintf("%s: %.200s, want %.200s", k, ja, jb))
		}
	}
	for k := range ma {
		if _, ok := mb[k]; !ok {
			out = append(out, k+": only in the first")
		}
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// TestWindows_NotTaken_RegistryNotEmptyOrDryRun: a first sync whose
// registry holds a policy already, and a dry run, plan the whole tree:
// one listing, every item in the plan.
func TestWindows_NotTaken_RegistryNotEmptyOrDryRun(t *testing.T) {
	t.Parallel()
	const n = 60
	t.Run("dry run", func(t *testing.T) {
		t.Parallel()
		r := newCFRig(t, n, nil)
		res, err := r.run(t.Context(), syncer.Options{DryRun: true, FirstSyncWindow: 10})
		if err != nil || len(res.Plan.Items) != n || res.Plan.Omitted != nil {
			t.Fatalf("dry run: %d items (omitted %v), %v; want all %d", len(res.Plan.Items), res.Plan.Omitted, err, n)
		}
		if trees := r.gh.Requests()[githubtest.KindTree]; trees != 1 {
			t.Errorf("%d tree listings, want 1: the whole tree at once", trees)
		}
	})
	t.Run("a policy written before", func(t *testing.T) {
		t.Parallel()
		r := newCFRig(t, n, nil)
		pair := registry.PolicyPair(policy.Entry{PolicyName: "정책 0001", Title: "old", Status: policy.StatusActive, LastUpdated: "2026-11-01T00:00:00Z", SHA: strings.Repeat("0", 40), Path: "규정/01/정책 0001.md"})
		r.cf.Set(pair.Key, pair.Value, pair.Metadata, 0)
		res, err := r.run(t.Context(), syncer.Options{FirstSyncWindow: 10, BatchSize: 20, ConsistencyWindow: time.Millisecond})
		if err != nil || res.Summary.Added != n-1 || res.Summary.Updated != 1 || len(res.Plan.Items) != n || res.Plan.Omitted != nil {
			t.Fatalf("%d added, %d updated, %d items (omitted %v), %v; want the whole plan", res.Summary.Added, res.Summary.Updated, len(res.Plan.Items), res.Plan.Omitted, err)
		}
	})
}

// TestWindows_Deadline_NextRunWritesTheRestOnce: a first sync in windows
// whose deadline comes near stops: partial, stopped early, counting
// waiting both the writes it had no time for and the policy files of the
// windows it did not reach; the next run (full, whole) writes only those,
// each policy once over both runs. Between windows, once the first
// window's writes landed, nothing is named (those windows were never
// listed); within the second window, its unsent writes are.
func TestWindows_Deadline_NextRunWritesTheRestOnce(t *testing.T) {
	t.Parallel()
	for _, between := range []bool{true, false} {
		name := map[bool]string{true: "between windows", false: "within a window"}[between]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const n = 120
			r := newCFRig(t, n, nil)
			ctx := newNearingDeadline()
			opt := syncer.Options{BatchSize: 50, FirstSyncWindow: 40, Concurrency: 1}
			near := func(int) {
				if len(r.policyNames()) > 0 {
					ctx.near(time.Second) // the first window's writes landed
				}
			}
			if between {
				r.bulk.after = near
			} else {
				r.bulk.before = near
			}
			res, err := r.run(ctx, opt)
			sum := res.Summary
			if !errors.Is(err, syncer.ErrPartial) || sum.Status != policy.RunPartial || !sum.StoppedEarly {
				t.Fatalf("err = %v, status %s, stopped early %v; want partial, stopped early", err, sum.Status, sum.StoppedEarly)
			}
			written := len(r.policyNames())
			if written == 0 || written == n || sum.Added != written || sum.Waiting != n-written || len(sum.Failures) != 0 {
				t.Errorf("%d written, %d added, %d waiting, %d failed: want some written, the rest of %d waiting, none failed", written, sum.Added, sum.Waiting, len(sum.Failures), n)
			}
			trees := r.gh.Requests()[githubtest.KindTree]
			if between && (trees != 1 || len(sum.WaitingNames) != 0 || sum.Unreached != n-written || strings.Contains(err.Error(), "()") || !strings.Contains(err.Error(), "policy files of windows not reached")) {
				t.Errorf("%d tree listings, waiting names %q, error %q: want the first window's only, none named", trees, sum.WaitingNames, err)
			}
			if !between && (trees != 2 || len(sum.WaitingNames) == 0) {
				t.Errorf("%d tree listings, waiting names %q: want two windows listed, the second's unsent writes named", trees, sum.WaitingNames)
			}
			res, err = r.run(t.Context(), opt)
			if err != nil || res.Summary.Mode != "full" || res.Summary.Added != n-written {
				t.Fatalf("next run: %v, %s mode, %d added; want full, adding the %d waiting", err, res.Summary.Mode, res.Summary.Added, n-written)
			}
			checkWrittenOnce(t, r.bulk.landings(), n, 2)
			checkAnnouncedFirst(t, r.bulk.landings())
		})
	}
}

// TestWindows_Budget_EachWindowCountsWhatTheOnesBeforeWrote: under a daily
// write budget that pays for the first window and part of the second, a
// first sync in windows spends no more than the budget (each window's fit
// counts what the windows before it wrote), ends partial with the rest
// waiting for the budget, and the next day's run writes the rest once.
func TestWindows_Budget_EachWindowCountsWhatTheOnesBeforeWrote(t *testing.T) {
	t.Parallel()
	const n, budget = 120, 140
	r := newCFRig(t, n, nil)
	opt := syncer.Options{BatchSize: 50, FirstSyncWindow: 40, DailyWriteBudget: budget}
	res, err := r.run(t.Context(), opt)
	sum := res.Summary
	if !errors.Is(err, syncer.ErrPartial) || sum.Status != policy.RunPartial || sum.StoppedEarly {
		t.Fatalf("err = %v, status %s, stopped early %v; want partial, waiting for the budget", err, sum.Status, sum.StoppedEarly)
	}
	written := len(r.policyNames())
	if billed := r.s.Registry.Usage().Writes; billed > budget || written == 0 || sum.Added != written || sum.Waiting != n-written {
		t.Errorf("billed %d writes (budget %d), %d written, %d added, %d waiting: want within the budget, the rest of %d waiting", billed, budget, written, sum.Added, sum.Waiting, n)
	}
	if trees := r.gh.Requests()[githubtest.KindTree]; trees < 2 {
		t.Errorf("%d tree listings: want the budget to cut a later window, not the first", trees)
	}
	r.clock.Advance(24 * time.Hour)
	res, err = r.run(t.Context(), syncer.Options{BatchSize: 50})
	if err != nil || res.Summary.Added != n-written {
		t.Fatalf("next day: %v, %d added; want the %d waiting", err, res.Summary.Added, n-written)
	}
	checkWrittenOnce(t, r.bulk.landings(), n, 2)
}

// TestWindows_WalkedTree_CountedOnce: a tree whose listings GitHub cuts is
// walked, listing again what the cut listings showed; the first listing
// counts each file once, so a tree of exactly a window's policies is one
// window (counted twice, the bench's 50,000 took two).
func TestWindows_WalkedTree_CountedOnce(t *testing.T) {
	t.Parallel()
	const n = 60
	r := newCFRig(t, n, nil)
	r.gh.TruncateTreesOver = 20
	res, err := r.run(t.Context(), syncer.Options{BatchSize: 50, FirstSyncWindow: n})
	if err != nil || res.Summary.Added != n {
		t.Fatalf("%v, %d added; want %d", err, res.Summary.Added, n)
	}
	if res.Plan.Omitted != nil || len(res.Plan.Items) != n {
		t.Errorf("plan of %d items (omitted %+v): want the whole plan, one window", len(res.Plan.Items), res.Plan.Omitted)
	}
	if links := r.gh.Requests()[githubtest.KindArchiveLink]; links > 1 {
		t.Errorf("%d archive reads: want one window's", links)
	}
}

// windowsOf is how many windows a first sync of the cfRig's n policies
// takes at size, and how many of them window 0 holds.
func windowsOf(t *testing.T, n, size int) (windows, first int) {
	t.Helper()
	r := newCFRig(t, n, nil)
	if _, err := r.run(t.Context(), syncer.Options{BatchSize: 50, FirstSyncWindow: size}); err != nil {
		t.Fatal(err)
	}
	windows = r.gh.Requests()[githubtest.KindTree]
	for i := range n {
		h := fnv.New32a()
		_, _ = io.WriteString(h, policy.NameOf(fmt.Sprintf("규정/%02d/정책 %04d.md", i%7, i)))
		if h.Sum32()%uint32(windows) == 0 {
			first++
		}
	}
	return windows, first
}

// TestWindows_BudgetSpentByEarlierWindows_PartialNotRefused: a daily
// write budget that window 0 fills to the write leaves the later windows
// waiting — partial, the rest counted — not a refusal ("no policy
// written") after window 0's writes (a reviewer: budget 67 of 120
// policies in 4 windows was refused, 90 policies never counted).
func TestWindows_BudgetSpentByEarlierWindows_PartialNotRefused(t *testing.T) {
	t.Parallel()
	const n, size = 120, 40
	windows, first := windowsOf(t, n, size)
	if windows < 3 {
		t.Fatalf("%d windows: the test needs three or more", windows)
	}
	fixed := int64(differ.MetadataWrites + 2 + 2)
	for _, budget := range []int64{fixed + 2*int64(first) - 1, fixed + 2*int64(first), fixed + 2*int64(first) + 1} {
		t.Run(fmt.Sprint("budget ", budget), func(t *testing.T) {
			t.Parallel()
			r := newCFRig(t, n, nil)
			res, err := r.run(t.Context(), syncer.Options{BatchSize: 50, FirstSyncWindow: size, DailyWriteBudget: budget})
			sum, written := res.Summary, len(r.policyNames())
			if !errors.Is(err, syncer.ErrPartial) || sum.Status != policy.RunPartial || written == 0 || sum.Added != written || sum.Waiting != n-written {
				t.Errorf("%v, %s, %d written, %d added, %d waiting: want partial, the rest of %d waiting", err, sum.Status, written, sum.Added, sum.Waiting, n)
			}
			if billed := r.s.Registry.Usage().Writes; billed > budget {
				t.Errorf("billed %d writes, budget %d", billed, budget)
			}
			r.clock.Advance(24 * time.Hour)
			if res, err = r.run(t.Context(), syncer.Options{BatchSize: 50}); err != nil || res.Summary.Added != n-written {
				t.Fatalf("next day: %v, %d added; want the %d waiting", err, res.Summary.Added, n-written)
			}
			checkWrittenOnce(t, r.bulk.landings(), n, 2)
		})
	}
}

// TestWindows_DeadlineDuringALaterWindowsListing_PartialNotFailed: the
// deadline passes while a later window lists the tree (GitHub slow): that
// window applied nothing, so it is one not reached — the run is partial,
// stopped early, the rest counted — not failed (a reviewer: "failed",
// dirty, 90 policies counted nowhere).
func TestWindows_DeadlineDuringALaterWindowsListing_PartialNotFailed(t *testing.T) {
	t.Parallel()
	const n = 120
	r := newCFRig(t, n, nil)
	ctx := newNearingDeadline()
	opt := faultAfterFirstWindow(r, ctx, githubtest.KindTree, githubtest.Hang(), 2*time.Second, func() { time.AfterFunc(500*time.Millisecond, ctx.pass) })
	res, err := r.run(ctx, opt)
	sum, written := res.Summary, len(r.policyNames())
	if !errors.Is(err, syncer.ErrPartial) || sum.Status != policy.RunPartial || !sum.StoppedEarly || written == 0 || sum.Waiting != n-written || sum.Unreached != n-written {
		t.Fatalf("%v, %s, stopped early %v, %d written, %d waiting (%d not reached): want partial, stopped early, the rest of %d waiting", err, sum.Status, sum.StoppedEarly, written, sum.Waiting, sum.Unreached, n)
	}
	r.bulk.after = nil
	if res, err = r.run(t.Context(), opt); err != nil || res.Summary.Added != n-written {
		t.Fatalf("next run: %v, %d added; want the %d waiting", err, res.Summary.Added, n-written)
	}
	checkWrittenOnce(t, r.bulk.landings(), n, 2)
}

// TestWindows_UnsuccessfulKeysInSeveralWindows_SameRecordAsWhole: keys
// Cloudflare refuses in several windows leave the record a whole first
// sync leaves: the same failures and the same pending names, sorted (a
// reviewer: in window order).
func TestWindows_UnsuccessfulKeysInSeveralWindows_SameRecordAsWhole(t *testing.T) {
	t.Parallel()
	const n = 150
	whole, windowed := windowedRig(t, n), windowedRig(t, n)
	keys := []string{registry.PolicyKey("정책 0007"), registry.PolicyKey("정책 0100"), registry.PolicyKey("정책 0042"), registry.PolicyKey("정책 0143")}
	whole.cf.FailKeys(keys...)
	windowed.cf.FailKeys(keys...)
	if _, err := whole.run(t.Context(), syncer.Options{BatchSize: 20}); !errors.Is(err, syncer.ErrItemsFailed) && !errors.Is(err, syncer.ErrPartial) {
		t.Fatalf("whole: %v", err)
	}
	if _, err := windowed.run(t.Context(), syncer.Options{BatchSize: 20, FirstSyncWindow: 40}); !errors.Is(err, syncer.ErrItemsFailed) && !errors.Is(err, syncer.ErrPartial) {
		t.Fatalf("windowed: %v", err)
	}
	if trees := windowed.gh.Requests()[githubtest.KindTree]; trees < 2 {
		t.Fatalf("%d tree listings: not in windows", trees)
	}
	// the failures' errors name the size of the batch they were in, which windows change
	got, want := windowed.lastRun(), whole.lastRun()
	if diff := recordDiff(t, got, want, "failures"); diff != "" {
		t.Errorf("lastRun differs from a whole first sync's: %s", diff)
	}
	names := func(fs []policy.Failure) (out []string) {
		for _, f := range fs {
			out = append(out, f.PolicyName)
		}
		return out
	}
	if !slices.Equal(names(got.Failures), names(want.Failures)) || len(got.Failures) != len(keys) {
		t.Errorf("failures %v, whole %v", names(got.Failures), names(want.Failures))
	}
}

// TestWindows_RetryOfALaterWindowsListingPastTheDeadline_NotReached: a
// later window's listing answered 502 when the retry would end past the
// deadline applied nothing: that window is one not reached, the run
// partial and stopped early, the budget not named — not failed and dirty
// (reviewers: the drop waited for the deadline itself to pass, not for a
// retry owed past it; then it did not say the deadline stopped the run).
func TestWindows_RetryOfALaterWindowsListingPastTheDeadline_NotReached(t *testing.T) {
	t.Parallel()
	const n = 120
	r := newCFRig(t, n, nil)
	ctx := newNearingDeadline()
	opt := faultAfterFirstWindow(r, ctx, githubtest.KindTree, githubtest.ServerError(502), 400*time.Millisecond, nil)
	res, err := r.run(ctx, opt)
	sum, written := res.Summary, len(r.policyNames())
	if !errors.Is(err, syncer.ErrPartial) || sum.Status != policy.RunPartial || sum.Dirty || written == 0 || sum.Waiting != n-written || sum.Unreached != n-written {
		t.Fatalf("%v, %s, dirty %v, %d written, %d waiting (%d not reached): want partial, the rest of %d not reached", err, sum.Status, sum.Dirty, written, sum.Waiting, sum.Unreached, n)
	}
	// a stop for the deadline, however much time is left: the error named
	// DAILY_WRITE_BUDGET, which is not set (a later review)
	if !sum.StoppedEarly || strings.Contains(err.Error(), "DAILY_WRITE_BUDGET") {
		t.Errorf("stopped early %v; %v: want stopped early (the deadline), no budget named", sum.StoppedEarly, err)
	}
}

// TestWindows_FailuresNotRecorded_EveryWindowApplied_Failed: a failure
// whose record fails (its queue key refused) fails the run after every
// window, as a whole run applies all and then fails; nothing waits, so
// nothing is said to wait for the budget (a reviewer: the windows stopped,
// and status blamed DAILY_WRITE_BUDGET, which was not set).
func TestWindows_FailuresNotRecorded_EveryWindowApplied_Failed(t *testing.T) {
	t.Parallel()
	const n = 120
	whole, windowed := newCFRig(t, n, nil), newCFRig(t, n, nil)
	for _, r := range []*cfRig{whole, windowed} {
		r.cf.FailKeys(registry.QueueKey("정책 0002")) // its announcement and its failure record both fail
	}
	_, werr := whole.run(t.Context(), syncer.Options{BatchSize: 50})
	res, err := windowed.run(t.Context(), syncer.Options{BatchSize: 50, FirstSyncWindow: 40})
	sum := res.Summary
	if werr == nil || err == nil || sum.Status != policy.RunFailed || sum.Waiting != 0 || sum.Unreached != 0 {
		t.Fatalf("whole %v; windowed %v, %s, %d waiting (%d not reached): want both failed, nothing waiting", werr, err, sum.Status, sum.Waiting, sum.Unreached)
	}
	if got, want := len(windowed.policyNames()), len(whole.policyNames()); got != want || got != n-1 {
		t.Errorf("%d policies written in windows, %d whole: want %d, every window applied", got, want, n-1)
	}
}

// TestWindows_SkipsAndConflictsInSeveralWindows_ByNameAsWhole: skips and
// conflicts spread over several windows are recorded by name, as a whole
// first sync records them, not window by window (a reviewer).
func TestWindows_SkipsAndConflictsInSeveralWindows_ByNameAsWhole(t *testing.T) {
	t.Parallel()
	const n = 150
	mk := func() *cfRig {
		r := newCFRig(t, n, nil)
		for i := 0; i < n; i += 11 {
			r.repo.Write(fmt.Sprintf("규정/빈/정책 %04d.md", i), "")      // a conflict's loser
			r.repo.Write(fmt.Sprintf("규정/비어있음/빈 정책 %04d.md", i), "") // a skip
		}
		r.head = r.repo.Commit("skips and conflicts everywhere")
		return r
	}
	whole, windowed := mk(), mk()
	if _, err := whole.run(t.Context(), syncer.Options{BatchSize: 20}); err != nil {
		t.Fatalf("whole: %v", err)
	}
	if _, err := windowed.run(t.Context(), syncer.Options{BatchSize: 20, FirstSyncWindow: 40}); err != nil {
		t.Fatalf("windowed: %v", err)
	}
	if trees := windowed.gh.Requests()[githubtest.KindTree]; trees < 2 {
		t.Fatalf("%d tree listings: not in windows", trees)
	}
	got, want := windowed.lastRun(), whole.lastRun()
	if diff := recordDiff(t, got, want); diff != "" || len(got.Skipped) != 14 || len(got.Conflicts) != 14 {
		t.Errorf("%d skipped, %d conflicts; lastRun differs from a whole first sync's: %s", len(got.Skipped), len(got.Conflicts), diff)
	}
}

// faultAfterFirstWindow arms, once the first window's writes have landed,
// a GitHub fault on the next request of kind and brings ctx's deadline
// near (then calls then, when not nil): a later window meets both. It
// returns the options the tests run with (windows of 40, one batch in
// flight, 100 ms kept for the record).
func faultAfterFirstWindow(r *cfRig, ctx *nearingDeadline, kind string, fault githubtest.Fault, near time.Duration, then func()) syncer.Options {
	armed := false
	r.bulk.after = func(int) {
		if !armed && len(r.policyNames()) > 0 {
			armed = true
			r.gh.FailNext(kind, 1, fault)
			ctx.near(near)
			if then != nil {
				then()
			}
		}
	}
	return syncer.Options{BatchSize: 50, FirstSyncWindow: 40, Concurrency: 1, StopBefore: 100 * time.Millisecond}
}
