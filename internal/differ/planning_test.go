package differ_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/queue"
)

var now = time.Date(2026, 11, 25, 16, 0, 0, 0, time.UTC)

func entry(name string, n int) policy.Entry {
	return policy.Entry{PolicyName: name, Title: name, Status: policy.StatusActive, SHA: sha(n), Path: "a/" + name + ".md"}
}

func entries(es ...policy.Entry) map[string]policy.Entry {
	m := make(map[string]policy.Entry, len(es))
	for _, e := range es {
		m[e.PolicyName] = e
	}
	return m
}

func TestChooseMode(t *testing.T) {
	t.Parallel()
	recent := &policy.RunSummary{LastFullRun: now.Add(-time.Hour).Format(time.RFC3339)}
	old := &policy.RunSummary{LastFullRun: now.Add(-8 * 24 * time.Hour).Format(time.RFC3339)}
	week := 7 * 24 * time.Hour
	for _, tc := range []struct {
		name      string
		in        differ.ModeInput
		mode, why string
	}{
		{"asked", differ.ModeInput{Full: true, Last: "a", Head: "a", Previous: recent}, differ.ModeFull, "requested"},
		{"first run", differ.ModeInput{Head: "a"}, differ.ModeFull, "first run"},
		{"no full run recorded, head moved", differ.ModeInput{Last: "a", Head: "b"}, differ.ModeFull, "no full run recorded"},
		{"no full run recorded, nothing new", differ.ModeInput{Last: "a", Head: "a"}, differ.ModeUnchanged, ""},
		{"reconcile interval passed", differ.ModeInput{Last: "a", Head: "a", Previous: old}, differ.ModeFull, "reconcile interval passed"},
		{"head moved", differ.ModeInput{Last: "a", Head: "b", Previous: recent}, differ.ModeIncremental, ""},
		{"retries waiting", differ.ModeInput{Last: "a", Head: "a", Previous: recent, Pending: 1}, differ.ModeIncremental, "retry"},
		{"nothing to do", differ.ModeInput{Last: "a", Head: "a", Previous: recent}, differ.ModeUnchanged, ""},
		{"reconcile due, a few minutes early", differ.ModeInput{Last: "a", Head: "b", Previous: &policy.RunSummary{LastFullRun: now.Add(-week + 5*time.Minute).Format(time.RFC3339)}}, differ.ModeFull, "reconcile interval passed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Now, tc.in.ReconcileInterval, tc.in.Reconciles = now, week, true
			if mode, why := differ.ChooseMode(tc.in); mode != tc.mode || why != tc.why {
				t.Errorf("ChooseMode = %s (%q), want %s (%q)", mode, why, tc.mode, tc.why)
			}
		})
	}
}

func TestSettleQueue_RetriesDeletesRequeuesDropsAndHoldsBack(t *testing.T) {
	t.Parallel()
	msg := "boom"
	failed := func(name string, n int, op string) policy.QueueEntry {
		return policy.QueueEntry{PolicyName: name, SHA: sha(n), Operation: op, RetryCount: 1, ErrorMessage: &msg}
	}
	reg := entries(entry("gone", 1), entry("landed", 2), entry("skipped", 3), entry("dead", 4), entry("newer", 5))
	desired := desiredOf(map[string]policy.Desired{
		"landed": {PolicyName: "landed", Path: "a/landed.md", SHA: sha(2)},
		"dead":   {PolicyName: "dead", Path: "a/dead.md", SHA: sha(40)},
		"newer":  {PolicyName: "newer", Path: "a/newer.md", SHA: sha(51)},
	})
	plan := policy.Plan{
		Items: []policy.Item{
			{Action: policy.ActUpdate, PolicyName: "dead", Path: "a/dead.md", SHA: sha(40), Old: &policy.Old{SHA: sha(4)}},
			{Action: policy.ActUpdate, PolicyName: "newer", Path: "a/newer.md", SHA: sha(51), Old: &policy.Old{SHA: sha(5)}},
		},
		Skipped: []policy.Skip{{PolicyName: "skipped", Path: "a/skipped.md", Reason: "empty"}},
	}
	pending := map[string]policy.QueueEntry{
		"gone":    failed("gone", 10, policy.OpUpdate),
		"landed":  failed("landed", 2, policy.OpDelete),
		"skipped": failed("skipped", 30, policy.OpAdd),
	}
	dead := map[string]policy.DeadLetter{
		"dead":  {QueueEntry: failed("dead", 40, policy.OpUpdate)},
		"newer": {QueueEntry: failed("newer", 50, policy.OpUpdate)},
	}
	got, work := differ.SettleQueue(plan, desired, reg, pending, dead, now)

	wantItems := []policy.Item{
		plan.Items[1], // another version of a dead letter goes ahead
		{Action: policy.ActDelete, PolicyName: "gone", Old: &policy.Old{Path: "a/gone.md", SHA: sha(1)}},
	}
	if diff := cmp.Diff(wantItems, got.Items); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(plan.Skipped, got.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	wantHeld := []policy.Skip{{PolicyName: "dead", Path: "a/dead.md", Reason: queue.HeldBackReason("dead")}}
	if diff := cmp.Diff(wantHeld, got.HeldBack); diff != "" {
		t.Errorf("held back (-want +got):\n%s", diff)
	}
	wantWork := differ.QueueWork{
		Requeue: []policy.QueueEntry{{PolicyName: "landed", SHA: sha(2), Operation: policy.OpUpdate, CreatedAt: "2026-11-25T16:00:00Z"}},
		Drop:    []string{"skipped"},
	}
	if diff := cmp.Diff(wantWork, work); diff != "" {
		t.Errorf("queue work (-want +got):\n%s", diff)
	}
	if got := differ.SupersededDeadLetters(got, dead); !cmp.Equal(got, []string{"newer"}) {
		t.Errorf("superseded dead letters = %v, want [newer]", got)
	}
	if len(plan.Items) != 2 || len(plan.Skipped) != 1 {
		t.Error("SettleQueue changed its input plan")
	}
}

func TestSettleQueue_DeadDeleteHoldsBackTheDelete(t *testing.T) {
	t.Parallel()
	plan := policy.Plan{Items: []policy.Item{{Action: policy.ActDelete, PolicyName: "x", Old: &policy.Old{SHA: sha(1)}}}}
	dead := map[string]policy.DeadLetter{"x": {QueueEntry: policy.QueueEntry{PolicyName: "x", SHA: sha(1), Operation: policy.OpDelete}}}
	got, _ := differ.SettleQueue(plan, nil, entries(entry("x", 1)), nil, dead, now)
	if len(got.Items) != 0 || len(got.HeldBack) != 1 {
		t.Errorf("a dead delete must be held back: %+v", got)
	}
}

func TestMigrate_CarriesV1FieldsByTitle_RemovesTheV1Key_ReportsUnmatched(t *testing.T) {
	t.Parallel()
	v1 := map[string]policy.Entry{
		"학칙 전문": {Title: "학칙 전문", Legacy: &policy.Legacy{FileNo: "868"}},
		"없는 규정": {Title: "없는 규정", Legacy: &policy.Legacy{FileNo: "1"}},
	}
	plan := policy.Plan{Items: []policy.Item{{Action: policy.ActAdd, PolicyName: "학칙", Path: "학칙.md", SHA: sha(1), Title: "학칙 전문"}}}
	got, mig := differ.Migrate(plan, nil, v1, false, now)
	if mig.Carry["학칙"].V1().FileNo != "868" {
		t.Errorf("carry = %+v", mig.Carry)
	}
	if !cmp.Equal(mig.Unmatched, []string{"없는 규정"}) {
		t.Errorf("unmatched = %v", mig.Unmatched)
	}
	want := policy.Item{Action: policy.ActMigrate, PolicyName: "학칙 전문", Old: &policy.Old{Path: "v1 entry, fields moved to policy:학칙"}}
	if len(got.Items) != 2 || !cmp.Equal(got.Items[1], want) {
		t.Errorf("items = %+v, want the add and the v1 key's removal", got.Items)
	}
}

// The retry of a failed v1 key removal reads the key and the policy that
// took its fields, both owed by name (RecordFailures): an incremental
// Migrate matches them again and removes the key, rewriting nothing when
// the policy carries the fields already, and carrying them when it does not.
func TestMigrate_Incremental_RetriedV1Removal_MatchesThePolicyRead(t *testing.T) {
	t.Parallel()
	v1 := map[string]policy.Entry{"학칙 전문": {Title: "학칙 전문", Legacy: &policy.Legacy{FileNo: "868"}}}
	carrier := entry("학칙", 1)
	carrier.Title = "학칙 전문"
	carrier.SetV1(policy.Legacy{FileNo: "868"})
	removal := policy.Item{Action: policy.ActMigrate, PolicyName: "학칙 전문", Old: &policy.Old{Path: "v1 entry, fields moved to policy:학칙"}}
	got, _ := differ.Migrate(policy.Plan{}, entries(carrier), v1, false, now)
	if !cmp.Equal(got.Items, []policy.Item{removal}) {
		t.Errorf("carrier with the fields: items = %+v, want the v1 key's removal only", got.Items)
	}
	bare := entry("학칙", 1)
	bare.Title = "학칙 전문"
	got, mig := differ.Migrate(policy.Plan{}, entries(bare), v1, false, now)
	if len(got.Items) != 2 || got.Items[0].Action != policy.ActMigrate || got.Items[0].PolicyName != "학칙" || !cmp.Equal(got.Items[1], removal) {
		t.Errorf("carrier without them: items = %+v, want 학칙 rewritten and the v1 key removed", got.Items)
	}
	if mig.Carry["학칙"].V1().FileNo != "868" {
		t.Errorf("carry = %+v", mig.Carry)
	}
	if name, ok := differ.CarrierOf(removal); !ok || name != "학칙" {
		t.Errorf("CarrierOf = %q, %t", name, ok)
	}
	fs := differ.RecordFailures(policy.Plan{Items: []policy.Item{removal, {Action: policy.ActMove, PolicyName: "학칙", Path: "b/학칙.md", SHA: sha(1)}}},
		[]policy.Failure{{PolicyName: "학칙 전문", Error: "boom"}, {PolicyName: "학칙", Error: "boom"}}, nil, "", now)
	if !cmp.Equal(fs.Owed, []string{"학칙 전문", "학칙"}) {
		t.Errorf("owed = %v, want the v1 key and the policy that took its fields, once each", fs.Owed)
	}
}

func TestMigrate_FullRun_RewritesExpiredLegacy(t *testing.T) {
	t.Parallel()
	e := entry("규정", 1)
	e.SetV1(policy.Legacy{FileNo: "7", LegacyUntil: now.Add(-time.Hour).Format(policy.TimeLayout)})
	got, _ := differ.Migrate(policy.Plan{}, entries(e, entry("plain", 2)), nil, true, now)
	if len(got.Items) != 1 || got.Items[0].PolicyName != "규정" || got.Items[0].Action != policy.ActMigrate {
		t.Fatalf("items = %+v, want one migrate of 규정", got.Items)
	}
	if w := differ.WithLegacy(e, nil, now); w.V1().FileNo != "" || w.V1().LegacyUntil != "" {
		t.Errorf("expired legacy fields kept: %+v", w)
	}
	if got, _ := differ.Migrate(policy.Plan{}, entries(e), nil, false, now); len(got.Items) != 0 {
		t.Errorf("an incremental run without v1 entries migrates nothing: %+v", got.Items)
	}
}

func TestWithLegacy_Keeps90DaysFromTheFirstCarry(t *testing.T) {
	t.Parallel()
	got := differ.WithLegacy(entry("학칙", 1), map[string]policy.Entry{"학칙": {Legacy: &policy.Legacy{FileNo: "868", PreviewURL: "p"}}}, now)
	if got.V1().FileNo != "868" || got.V1().PreviewURL != "p" || got.V1().LegacyUntil != "2027-02-23T16:00:00Z" {
		t.Errorf("carried entry = %+v", got)
	}
	if again := differ.WithLegacy(got, nil, now.Add(24*time.Hour)); again.V1().LegacyUntil != got.V1().LegacyUntil {
		t.Errorf("the expiry moved: %s → %s", got.V1().LegacyUntil, again.V1().LegacyUntil)
	}
}

func TestWithContent_TitlesSkipsAndFailuresNeverDeletes(t *testing.T) {
	t.Parallel()
	plan := policy.Plan{Items: []policy.Item{
		{Action: policy.ActAdd, PolicyName: "a", Path: "a.md", SHA: sha(1)},
		{Action: policy.ActUpdate, PolicyName: "b", Path: "b.md", SHA: sha(2)},
		{Action: policy.ActAdd, PolicyName: "c", Path: "c.md", SHA: sha(3)},
		{Action: policy.ActAdd, PolicyName: "d", Path: "d.md", SHA: sha(4)},
		{Action: policy.ActMove, PolicyName: "e", Path: "x/e.md", SHA: sha(5)},
		{Action: policy.ActDelete, PolicyName: "f", Old: &policy.Old{SHA: sha(6)}},
	}}
	if got := len(differ.Unread(plan)); got != 4 {
		t.Errorf("Unread = %d files, want the 4 adds and updates", got)
	}
	sizedPlan := policy.Plan{Items: slices.Clone(plan.Items)}
	differ.Size(sizedPlan, differ.NewDesired(
		policy.Desired{PolicyName: "a", Path: "a.md", SHA: sha(1), Size: 3 << 20},
		policy.Desired{PolicyName: "b", Path: "b.md", SHA: sha(9), Size: 5},       // another version: not b's size
		policy.Desired{PolicyName: "c", Path: "c.md", SHA: sha(3), Size: 1 << 40}, // past 2 GiB: read as 2 GiB
	))
	sized := differ.Unread(sizedPlan)
	if sized[0].Size != 3<<20 || sized[1].Size != -1 || sized[2].Size != math.MaxInt32 || sized[3].Size != -1 {
		t.Errorf("Unread sizes %d, %d, %d, %d: want the tree's size where known (at most 2 GiB), -1 elsewhere", sized[0].Size, sized[1].Size, sized[2].Size, sized[3].Size)
	}
	if plan.Items[0].TreeSize != 0 {
		t.Error("Size wrote into another plan's items")
	}
	read := map[string]policy.Content{"a.md": {Size: 10, Title: "A"}, "b.md": {Size: 0}, "c.md": {Size: 2 << 20, Title: "C"}}
	got, failures := differ.WithContent(plan, read, map[string]error{"d.md": errors.New("502")}, entries(policy.Entry{PolicyName: "e", Title: "E"}), differ.Options{})
	var names []string
	for _, it := range got.Items {
		names = append(names, it.PolicyName+"="+it.Title)
	}
	if want := "a=A e=E f="; strings.Join(names, " ") != want {
		t.Errorf("items %v, want %s", names, want)
	}
	if len(got.Skipped) != 2 || got.Skipped[0].Reason != differ.ReasonEmpty || !strings.HasPrefix(got.Skipped[1].Reason, "too large") {
		t.Errorf("skipped = %+v", got.Skipped)
	}
	if len(failures) != 1 || failures[0].PolicyName != "d" || !strings.Contains(failures[0].Error, "502") {
		t.Errorf("failures = %+v", failures)
	}
}

func TestGuard(t *testing.T) {
	t.Parallel()
	reg := map[string]policy.Entry{}
	var renameAll, deleteAll policy.Plan
	for i := 0; i < 20; i++ {
		name := string(rune('가' + i))
		reg[name] = entry(name, i)
		deleteAll.Items = append(deleteAll.Items, policy.Item{Action: policy.ActDelete, PolicyName: name, Old: &policy.Old{SHA: sha(i)}})
		renameAll.Items = append(renameAll.Items,
			policy.Item{Action: policy.ActAdd, PolicyName: name + " 개정", SHA: sha(i)},
			policy.Item{Action: policy.ActDelete, PolicyName: name, Old: &policy.Old{SHA: sha(i)}})
	}
	if err := guard(deleteAll, reg, nil, 0); !errors.Is(err, differ.ErrRefused) || !strings.Contains(err.Error(), "deletes all 20") {
		t.Errorf("an empty tree: %v", err)
	}
	if err := guard(renameAll, reg, nil, 0); err != nil {
		t.Errorf("renaming every file loses nothing: %v", err)
	}
	some := policy.Plan{Items: deleteAll.Items[:11]}
	if err := guard(some, reg, nil, 0); !errors.Is(err, differ.ErrRefused) || !strings.Contains(err.Error(), "loses 11 of 20") {
		t.Errorf("11 of 20 lost: %v", err)
	}
	if err := guard(policy.Plan{Items: deleteAll.Items[:4]}, reg, nil, 0); err != nil {
		t.Errorf("4 of 20 lost is under the threshold: %v", err)
	}
	if err := guard(deleteAll, nil, nil, 0); err != nil {
		t.Errorf("an empty registry has nothing to lose: %v", err)
	}
}

func TestCarryOver_KeepsWhatTheRunDidNotLookAt(t *testing.T) {
	t.Parallel()
	scope := map[string]bool{"a": true}
	prevSkips := []policy.Skip{{PolicyName: "a", Path: "a.md"}, {PolicyName: "b", Path: "b.md"}}
	prevConflicts := []policy.Conflict{{PolicyName: "c", Winner: "1/c.md"}}
	if !differ.Touches(scope, prevSkips, nil) || differ.Touches(map[string]bool{"z": true}, prevSkips, prevConflicts) {
		t.Error("Touches: a name in scope that was skipped is touched; others are not")
	}
	skips, conflicts := differ.CarryOver(scope, nil, nil, prevSkips, prevConflicts)
	if len(skips) != 1 || skips[0].PolicyName != "b" || len(conflicts) != 1 {
		t.Errorf("carried skips %+v conflicts %+v", skips, conflicts)
	}
	in, _ := differ.InScope(scope, prevSkips, nil)
	if len(in) != 1 || in[0].PolicyName != "a" || len(prevSkips) != 2 {
		t.Errorf("InScope = %+v (input %+v)", in, prevSkips)
	}
}

func TestGuard_RenamesWithEdits_SurviveByTitleOrGitsPairing(t *testing.T) {
	t.Parallel()
	reg := map[string]policy.Entry{}
	var byTitle, byRename policy.Plan
	renames := map[string]string{}
	for i := 0; i < 20; i++ {
		old := string(rune('가' + i))
		reg[old] = entry(old, i)
		del := policy.Item{Action: policy.ActDelete, PolicyName: old, Old: &policy.Old{SHA: sha(i)}}
		// renamed and edited: a new blob, the same title
		byTitle.Items = append(byTitle.Items, policy.Item{Action: policy.ActAdd, PolicyName: "1-2-" + old, SHA: sha(100 + i), Title: old}, del)
		// renamed and retitled: git paired the paths
		byRename.Items = append(byRename.Items, policy.Item{Action: policy.ActAdd, PolicyName: "1-2-" + old, SHA: sha(100 + i), Title: "new " + old}, del)
		renames[old] = "1-2-" + old
	}
	if err := guard(byTitle, reg, nil, 0); err != nil {
		t.Errorf("renamed and edited, titles kept: %v", err)
	}
	if err := guard(byRename, reg, nil, 0); !errors.Is(err, differ.ErrRefused) {
		t.Errorf("renamed, edited and retitled without git's pairing must be refused: %v", err)
	}
	if err := guard(byRename, reg, renames, 0); err != nil {
		t.Errorf("renamed, edited and retitled, paired by git: %v", err)
	}
}

func TestUnclean_AndChooseModeAfterIt(t *testing.T) {
	t.Parallel()
	ok := &policy.RunSummary{Status: policy.RunSuccess, CommitSHA: "c2", LastFullRun: now.Format(time.RFC3339)}
	for _, tc := range []struct {
		name       string
		prev       *policy.RunSummary
		last       string
		leftBehind bool
		unclean    bool
	}{
		{"clean", ok, "c2", false, false},
		{"lease left behind", ok, "c2", true, true},
		{"failed after writing", &policy.RunSummary{Status: policy.RunFailed, CommitSHA: "c3", Dirty: true}, "c2", false, true},
		{"failed before writing", &policy.RunSummary{Status: policy.RunFailed, CommitSHA: "c3", PreviousCommitSHA: "c2"}, "c2", false, false},
		{"refused", &policy.RunSummary{Status: policy.RunRefused, CommitSHA: "c3", PreviousCommitSHA: "c2"}, "c2", false, false},
		// it read a lagging lastCommit: its record replaced a later run's
		{"failed before writing, having read an older lastCommit", &policy.RunSummary{Status: policy.RunFailed, CommitSHA: "c3", PreviousCommitSHA: "c1"}, "c2", false, true},
		{"refused, having read an older lastCommit", &policy.RunSummary{Status: policy.RunRefused, CommitSHA: "c3", PreviousCommitSHA: "c1"}, "c2", false, true},
		{"a failed first sync, a later one's lastCommit stored", &policy.RunSummary{Status: policy.RunFailed, CommitSHA: "c3"}, "c2", false, true},
		{"last commit lost", ok, "c1", false, true},
		{"partial, last commit lost", &policy.RunSummary{Status: policy.RunPartial, CommitSHA: "c2"}, "c1", false, true},
		// it keeps lastCommit c1: a head moved back to c1 leaves no compare naming what it published of c2
		{"an incremental run waiting for the budget", &policy.RunSummary{Status: policy.RunPartial, Mode: differ.ModeIncremental, CommitSHA: "c2", Waiting: 3}, "c1", false, true},
		{"a full run waiting for the budget", &policy.RunSummary{Status: policy.RunPartial, Mode: differ.ModeFull, CommitSHA: "c2", Waiting: 3}, "c1", false, true},
		{"stopped before its deadline", &policy.RunSummary{Status: policy.RunPartial, CommitSHA: "c2", Waiting: 3, StoppedEarly: true}, "c1", false, true},
		{"a dry run records nothing", &policy.RunSummary{Status: policy.RunSuccess, CommitSHA: "c2", DryRun: true}, "c1", false, false},
		{"first run", nil, "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why := differ.Unclean(tc.prev, tc.last, tc.leftBehind)
			if (why != "") != tc.unclean {
				t.Fatalf("Unclean = %q, want unclean %v", why, tc.unclean)
			}
			if !tc.unclean || tc.last == "" {
				return
			}
			in := differ.ModeInput{Last: tc.last, Head: tc.last, Previous: ok, Unclean: why, Now: now, ReconcileInterval: 24 * time.Hour}
			if mode, reason := differ.ChooseMode(in); mode != differ.ModeFull || reason != why {
				t.Errorf("after an unclean run on an unchanged head: %s (%s), want a full run", mode, reason)
			}
		})
	}
}

func TestRenames_FromGitsPairing(t *testing.T) {
	t.Parallel()
	cs := policy.Changeset{Changes: []policy.Change{
		{Status: policy.Renamed, PreviousPath: "1-2-1.md", Path: "a/학칙.md"},
		{Status: policy.Renamed, PreviousPath: "x/학칙.md", Path: "y/학칙.md"}, // a move keeps the name
		{Status: policy.Renamed, PreviousPath: "notes.txt", Path: "b.md"},
	}}
	if got := differ.Renames(cs); !cmp.Equal(got, map[string]string{"1-2-1": "학칙"}) {
		t.Errorf("Renames = %v", got)
	}
}

func TestChooseMode_WebhookAndManualRuns_DoNotReconcile(t *testing.T) {
	t.Parallel()
	old := &policy.RunSummary{LastFullRun: now.Add(-48 * time.Hour).Format(time.RFC3339)}
	in := differ.ModeInput{Last: "a", Head: "b", Previous: old, Now: now, ReconcileInterval: 24 * time.Hour}
	if mode, _ := differ.ChooseMode(in); mode != differ.ModeIncremental {
		t.Errorf("a push between two scheduled runs: %s, want incremental", mode)
	}
	in.Reconciles = true
	if mode, _ := differ.ChooseMode(in); mode != differ.ModeFull {
		t.Errorf("the scheduled run: %s, want full", mode)
	}
}

func TestGuard_IncrementalRun_CountsAgainstTheWholeRegistry(t *testing.T) {
	t.Parallel()
	touched := map[string]policy.Entry{}
	var plan policy.Plan
	for i := 0; i < 15; i++ {
		name := fmt.Sprintf("규정 %02d", i)
		touched[name] = entry(name, i)
		plan.Items = append(plan.Items, policy.Item{Action: policy.ActDelete, PolicyName: name, Old: &policy.Old{SHA: sha(i)}})
	}
	if err := guard(plan, touched, nil, 60); !errors.Is(err, differ.ErrRefused) || !strings.Contains(err.Error(), "loses 15 of 60") {
		t.Errorf("15 of 60: %v", err)
	}
	if err := guard(plan, touched, nil, 100); err != nil {
		t.Errorf("15 of 100 is under the threshold: %v", err)
	}
}

func TestSupersededDeadLetters_AMigrationSupersedesNothing(t *testing.T) {
	t.Parallel()
	dead := map[string]policy.DeadLetter{"a": {}, "b": {}}
	plan := policy.Plan{Items: []policy.Item{
		{Action: policy.ActMigrate, PolicyName: "a", Path: "a.md", SHA: sha(1)},
		{Action: policy.ActUpdate, PolicyName: "b", Path: "b.md", SHA: sha(2)},
	}, HeldBack: []policy.Skip{{PolicyName: "a", Path: "a.md", Reason: queue.HeldBackReason("a")}}} // a's update is held back; its entry is migrated as it is
	if got := differ.SupersededDeadLetters(plan, dead); !cmp.Equal(got, []string{"b"}) {
		t.Errorf("superseded = %v, want only b (a's entry is rewritten as it is)", got)
	}
}

// TestSettleQueue_NothingToSettle_NoCopyOfTheItems: a plan the queue does
// not change (a first sync) keeps its items' array; one it reorders is
// copied, and its input is left as it was.
func TestSettleQueue_NothingToSettle_NoCopyOfTheItems(t *testing.T) {
	t.Parallel()
	plan := policy.Plan{Items: []policy.Item{
		{Action: policy.ActAdd, PolicyName: "a", Path: "a.md", SHA: sha(1)},
		{Action: policy.ActDelete, PolicyName: "b", Old: &policy.Old{Path: "b.md", SHA: sha(2)}},
	}}
	got, _ := differ.SettleQueue(plan, nil, nil, nil, nil, now)
	if !cmp.Equal(got.Items, plan.Items) || &got.Items[0] != &plan.Items[0] {
		t.Errorf("items %v: want the plan's own, not a copy", got.Items)
	}
	unsorted := policy.Plan{Items: []policy.Item{plan.Items[1], plan.Items[0]}}
	got, _ = differ.SettleQueue(unsorted, nil, nil, nil, nil, now)
	if !cmp.Equal(got.Items, plan.Items) {
		t.Errorf("items %v, want the put before the delete", got.Items)
	}
	if unsorted.Items[0].Action != policy.ActDelete {
		t.Error("SettleQueue sorted its input plan's items")
	}
}

// TestWithLegacy_LeavesTheGivenEntry: the entry a run writes is made from
// the listed one, a copy sharing its v1 fields: stamping or dropping them
// for the write leaves the listed entry as it was.
func TestWithLegacy_LeavesTheGivenEntry(t *testing.T) {
	t.Parallel()
	expired, fresh := entry("규정", 1), entry("학칙", 2)
	expired.SetV1(policy.Legacy{FileNo: "7", LegacyUntil: now.Add(-time.Hour).Format(policy.TimeLayout)})
	fresh.SetV1(policy.Legacy{FileNo: "8"})
	listed := entries(expired, fresh)
	if w := differ.WithLegacy(listed["규정"], nil, now); w.HasLegacy() {
		t.Errorf("expired v1 fields written: %+v", w.V1())
	}
	if w := differ.WithLegacy(listed["학칙"], nil, now); w.V1().LegacyUntil == "" {
		t.Errorf("carried v1 fields written without their expiry: %+v", w.V1())
	}
	if l := listed["규정"].V1(); l.FileNo != "7" || l.LegacyUntil == "" {
		t.Errorf("the listed entry lost its v1 fields: %+v", l)
	}
	if l := listed["학칙"].V1(); l != (policy.Legacy{FileNo: "8"}) {
		t.Errorf("the listed entry changed: %+v", l)
	}
}

// guard is the guard within the default limit, letting no plan through.
func guard(plan policy.Plan, entries map[string]policy.Entry, renames map[string]string, total int) error {
	return differ.GuardWithin(plan, entries, renames, total, differ.DefaultLimit, 0)
}
