package differ_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/unicode/norm"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/policy"
)

// sha returns a distinct 40-hex blob sha for n.
func sha(n int) string { return fmt.Sprintf("%040x", n) }

// desiredOf is the map's policies as the differ keeps them, sorted by name.
func desiredOf(m map[string]policy.Desired) differ.Desired {
	return differ.NewDesired(slices.Collect(maps.Values(m))...)
}

func file(path string, n int) policy.File { return policy.File{Path: path, SHA: sha(n), Size: 100} }

func known(path string, n int) policy.Entry {
	return policy.Entry{PolicyName: policy.NameOf(path), Path: path, SHA: sha(n)}
}

func registry(ks ...policy.Entry) map[string]policy.Entry {
	m := make(map[string]policy.Entry, len(ks))
	for _, k := range ks {
		m[k.PolicyName] = k
	}
	return m
}

func planTree(files []policy.File, reg map[string]policy.Entry, opt differ.Options) policy.Plan {
	desired, skipped, conflicts := differ.FromTree(files, opt)
	return differ.Plan(desired, reg, nil, skipped, conflicts)
}

func planChanges(cs policy.Changeset, reg map[string]policy.Entry, tree []policy.File) policy.Plan {
	desired, touched, skipped, conflicts := differ.FromChanges(cs, reg, tree, differ.Options{})
	return differ.Plan(desired, reg, touched, skipped, conflicts)
}

func add(name, path string, n int) policy.Item {
	return policy.Item{Action: policy.ActAdd, PolicyName: name, Path: path, SHA: sha(n)}
}

func update(name, oldPath string, oldN int, path string, n int) policy.Item {
	return policy.Item{Action: policy.ActUpdate, PolicyName: name, Path: path, SHA: sha(n), Old: &policy.Old{Path: oldPath, SHA: sha(oldN)}}
}

func move(name, oldPath, path string, n int) policy.Item {
	return policy.Item{Action: policy.ActMove, PolicyName: name, Path: path, SHA: sha(n), Old: &policy.Old{Path: oldPath, SHA: sha(n)}}
}

func del(name, oldPath string, oldN int) policy.Item {
	return policy.Item{Action: policy.ActDelete, PolicyName: name, Old: &policy.Old{Path: oldPath, SHA: sha(oldN)}}
}

func TestFromTree_PlansFromFullTree(t *testing.T) {
	t.Parallel()
	longName := strings.Repeat("가", 167)
	tests := []struct {
		name string
		tree []policy.File
		reg  map[string]policy.Entry
		opt  differ.Options
		want policy.Plan
	}{
		{
			name: "MoveKeepsName_NoDelete",
			tree: []policy.File{file("b/x.md", 1)},
			reg:  registry(known("a/x.md", 1)),
			want: policy.Plan{Items: []policy.Item{move("x", "a/x.md", "b/x.md", 1)}},
		},
		{
			name: "MoveWithNewContent_Update",
			tree: []policy.File{file("b/x.md", 2)},
			reg:  registry(known("a/x.md", 1)),
			want: policy.Plan{Items: []policy.Item{update("x", "a/x.md", 1, "b/x.md", 2)}},
		},
		{
			name: "Rename_DeletesOldAddsNew",
			tree: []policy.File{file("a/y.md", 2)},
			reg:  registry(known("a/x.md", 1)),
			want: policy.Plan{Items: []policy.Item{add("y", "a/y.md", 2), del("x", "a/x.md", 1)}},
		},
		{
			name: "RenameSameContent_DeletesOldAddsNew",
			tree: []policy.File{file("a/y.md", 1)},
			reg:  registry(known("a/x.md", 1)),
			want: policy.Plan{Items: []policy.Item{add("y", "a/y.md", 1), del("x", "a/x.md", 1)}},
		},
		{
			name: "FolderMove_AllMoves",
			tree: []policy.File{file("new/학칙.md", 1), file("new/규정 2.md", 2), file("new/sub/x.md", 3)},
			reg:  registry(known("old/학칙.md", 1), known("old/규정 2.md", 2), known("old/sub/x.md", 3)),
			want: policy.Plan{Items: []policy.Item{
				move("x", "old/sub/x.md", "new/sub/x.md", 3),
				move("규정 2", "old/규정 2.md", "new/규정 2.md", 2),
				move("학칙", "old/학칙.md", "new/학칙.md", 1),
			}},
		},
		{
			name: "FolderDeleted_Deletes",
			tree: []policy.File{file("keep/k.md", 9)},
			reg:  registry(known("gone/a.md", 1), known("gone/b.md", 2), known("keep/k.md", 9)),
			want: policy.Plan{Items: []policy.Item{del("a", "gone/a.md", 1), del("b", "gone/b.md", 2)}, Unchanged: 1},
		},
		{
			name: "Unchanged",
			tree: []policy.File{file("a/x.md", 1), file("README.md", 5), file(".github/pull_request_template.md", 6)},
			reg:  registry(known("a/x.md", 1)),
			want: policy.Plan{Unchanged: 1},
		},
		{
			name: "DuplicateNames_BytewiseFirstWins",
			tree: []policy.File{file("b/x.md", 2), file("a/x.md", 1), file("B/x.MD", 3)},
			want: policy.Plan{
				Items:     []policy.Item{add("x", "B/x.MD", 3)},
				Conflicts: []policy.Conflict{{PolicyName: "x", Winner: "B/x.MD", Losers: []string{"a/x.md", "b/x.md"}}},
			},
		},
		{
			name: "NFDAndNFCTwins_OneName",
			tree: []policy.File{file(norm.NFD.String("규정/학칙.md"), 1), file("학칙/학칙.md", 2)},
			want: policy.Plan{
				Items: []policy.Item{add("학칙", norm.NFD.String("규정/학칙.md"), 1)},
				Conflicts: []policy.Conflict{{
					PolicyName: "학칙", Winner: norm.NFD.String("규정/학칙.md"), Losers: []string{"학칙/학칙.md"},
				}},
			},
		},
		{
			name: "NFDRecommit_MovesPath",
			tree: []policy.File{file(norm.NFD.String("규정/학칙.md"), 1)},
			reg:  registry(known("규정/학칙.md", 1)),
			want: policy.Plan{Items: []policy.Item{move("학칙", "규정/학칙.md", norm.NFD.String("규정/학칙.md"), 1)}},
		},
		{
			name: "EmptyFile_KeepsEntry",
			tree: []policy.File{{Path: "a/x.md", SHA: sha(2), Size: 0}},
			reg:  registry(known("a/x.md", 1)),
			want: policy.Plan{Skipped: []policy.Skip{{PolicyName: "x", Path: "a/x.md", Reason: "empty"}}},
		},
		{
			name: "OversizedFile_KeepsEntry",
			tree: []policy.File{{Path: "b/x.md", SHA: sha(2), Size: 2 << 20}},
			reg:  registry(known("a/x.md", 1)),
			want: policy.Plan{Skipped: []policy.Skip{{PolicyName: "x", Path: "b/x.md", Reason: "too large (2097152 bytes > 1048576)"}}},
		},
		{
			name: "SizeLimitOption",
			tree: []policy.File{{Path: "x.md", SHA: sha(1), Size: 101}, {Path: "y.md", SHA: sha(2), Size: 100}},
			opt:  differ.Options{MaxFileSize: 100},
			want: policy.Plan{
				Items:   []policy.Item{add("y", "y.md", 2)},
				Skipped: []policy.Skip{{PolicyName: "x", Path: "x.md", Reason: "too large (101 bytes > 100)"}},
			},
		},
		{
			name: "SkippedWinner_LoserNotUsed",
			tree: []policy.File{{Path: "a/x.md", SHA: sha(2), Size: 0}, file("b/x.md", 3)},
			want: policy.Plan{
				Skipped:   []policy.Skip{{PolicyName: "x", Path: "a/x.md", Reason: "empty"}},
				Conflicts: []policy.Conflict{{PolicyName: "x", Winner: "a/x.md", Losers: []string{"b/x.md"}}},
			},
		},
		{
			name: "KeyTooLong_Skipped",
			tree: []policy.File{file("a/"+longName+".md", 1)},
			want: policy.Plan{Skipped: []policy.Skip{{PolicyName: longName, Path: "a/" + longName + ".md", Reason: "key too long"}}},
		},
		{
			name: "OddCharacters",
			tree: []policy.File{file("규정/학칙(개정)․2024 본문.md", 1), file("a:b.md", 2), file("\xff.md", 3)},
			want: policy.Plan{Items: []policy.Item{
				add("a:b", "a:b.md", 2),
				add("학칙(개정)․2024 본문", "규정/학칙(개정)․2024 본문.md", 1),
				add("\uFFFD", "\xff.md", 3),
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planTree(tt.tree, tt.reg, tt.opt)
			if diff := cmp.Diff(normalize(tt.want), got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// normalize gives a wanted plan the empty (not nil) slices Plan returns.
func normalize(p policy.Plan) policy.Plan {
	if p.Items == nil {
		p.Items = []policy.Item{}
	}
	if p.Skipped == nil {
		p.Skipped = []policy.Skip{}
	}
	if p.Conflicts == nil {
		p.Conflicts = []policy.Conflict{}
	}
	return p
}

func TestFromTree_WinnerIndependentOfOrder(t *testing.T) {
	t.Parallel()
	files := []policy.File{
		file("b/x.md", 2), file("a/x.md", 1), file(norm.NFD.String("가/x.md"), 3), file("a/X.md", 4), file("a/x.MD", 5),
	}
	wantDesired, wantSkipped, wantConflicts := differ.FromTree(files, differ.Options{})
	perm := make([]policy.File, len(files))
	for i := range len(files) {
		for j := range files {
			perm[j] = files[(i+j)%len(files)]
		}
		perm[0], perm[len(perm)-1] = perm[len(perm)-1], perm[0]
		d, s, c := differ.FromTree(perm, differ.Options{})
		if diff := cmp.Diff(wantDesired, d); diff != "" {
			t.Errorf("rotation %d: desired (-want +got):\n%s", i, diff)
		}
		if diff := cmp.Diff(wantSkipped, s); diff != "" {
			t.Errorf("rotation %d: skipped (-want +got):\n%s", i, diff)
		}
		if diff := cmp.Diff(wantConflicts, c); diff != "" {
			t.Errorf("rotation %d: conflicts (-want +got):\n%s", i, diff)
		}
	}
	if got, _ := wantDesired.Get("x"); got.Path != "a/x.MD" {
		t.Errorf("winner = %q, want a/x.MD", got.Path)
	}
}

func TestNeedsTree(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change policy.Change
		want   bool
	}{
		{"added", policy.Change{Status: policy.Added, Path: "a.md", SHA: sha(1)}, false},
		{"modified", policy.Change{Status: policy.Modified, Path: "a.md", SHA: sha(1)}, false},
		{"copied", policy.Change{Status: policy.Copied, Path: "b.md", PreviousPath: "a.md", SHA: sha(1)}, false},
		{"removed policy", policy.Change{Status: policy.Removed, Path: "a.md"}, true},
		{"removed readme", policy.Change{Status: policy.Removed, Path: "README.md"}, false},
		{"removed hidden", policy.Change{Status: policy.Removed, Path: ".github/x.md"}, false},
		{"removed text", policy.Change{Status: policy.Removed, Path: "a.txt"}, false},
		{"renamed from policy", policy.Change{Status: policy.Renamed, Path: "b/a.md", PreviousPath: "a/a.md", SHA: sha(1)}, true},
		{"renamed from text", policy.Change{Status: policy.Renamed, Path: "a.md", PreviousPath: "a.txt", SHA: sha(1)}, false},
		{"type changed", policy.Change{Status: policy.Changed, Path: "a.md", SHA: sha(1)}, true},
	}
	for _, tt := range tests {
		cs := policy.Changeset{Changes: []policy.Change{{Status: policy.Added, Path: "z.md", SHA: sha(9)}, tt.change}}
		if got := differ.NeedsTree(cs); got != tt.want {
			t.Errorf("%s: NeedsTree = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestFromChanges_PlansIncrementally(t *testing.T) {
	t.Parallel()
	changes := func(cs ...policy.Change) policy.Changeset {
		return policy.Changeset{Base: sha(100), Head: sha(101), Changes: cs}
	}
	tests := []struct {
		name string
		cs   policy.Changeset
		reg  map[string]policy.Entry
		tree []policy.File // head tree, given when NeedsTree
		want policy.Plan
	}{
		{
			name: "AbsentFromCompare_Unchanged",
			cs:   changes(policy.Change{Status: policy.Modified, Path: "a/y.md", SHA: sha(3)}),
			reg:  registry(known("a/x.md", 1), known("a/y.md", 2)),
			want: policy.Plan{Items: []policy.Item{update("y", "a/y.md", 2, "a/y.md", 3)}},
		},
		{
			name: "Added",
			cs:   changes(policy.Change{Status: policy.Added, Path: "학칙(개정)․2024 본문.md", SHA: sha(3)}, policy.Change{Status: policy.Added, Path: "a.txt", SHA: sha(4)}),
			reg:  registry(known("a/x.md", 1)),
			want: policy.Plan{Items: []policy.Item{add("학칙(개정)․2024 본문", "학칙(개정)․2024 본문.md", 3)}},
		},
		{
			name: "Empty_NothingPlanned",
			cs:   changes(),
			reg:  registry(known("a/x.md", 1)),
			want: policy.Plan{},
		},
		{
			name: "MoveKeepsName_NoDelete",
			cs:   changes(policy.Change{Status: policy.Renamed, Path: "b/x.md", PreviousPath: "a/x.md", SHA: sha(1)}),
			reg:  registry(known("a/x.md", 1), known("a/y.md", 2)),
			tree: []policy.File{file("b/x.md", 1), file("a/y.md", 2)},
			want: policy.Plan{Items: []policy.Item{move("x", "a/x.md", "b/x.md", 1)}},
		},
		{
			name: "Rename_DeletesOldAddsNew",
			cs:   changes(policy.Change{Status: policy.Renamed, Path: "a/z.md", PreviousPath: "a/x.md", SHA: sha(1)}),
			reg:  registry(known("a/x.md", 1), known("a/y.md", 2)),
			tree: []policy.File{file("a/z.md", 1), file("a/y.md", 2)},
			want: policy.Plan{Items: []policy.Item{add("z", "a/z.md", 1), del("x", "a/x.md", 1)}},
		},
		{
			name: "Removed_Deletes",
			cs:   changes(policy.Change{Status: policy.Removed, Path: "a/x.md"}),
			reg:  registry(known("a/x.md", 1), known("a/y.md", 2)),
			tree: []policy.File{file("a/y.md", 2)},
			want: policy.Plan{Items: []policy.Item{del("x", "a/x.md", 1)}},
		},
		{
			name: "WinnerRemoved_LoserMovesIn",
			cs:   changes(policy.Change{Status: policy.Removed, Path: "a/x.md"}),
			reg:  registry(known("a/x.md", 1)),
			tree: []policy.File{file("b/x.md", 1), file("c/x.md", 3)},
			want: policy.Plan{
				Items:     []policy.Item{move("x", "a/x.md", "b/x.md", 1)},
				Conflicts: []policy.Conflict{{PolicyName: "x", Winner: "b/x.md", Losers: []string{"c/x.md"}}},
			},
		},
		{
			name: "WinnerRemoved_LoserUpdates",
			cs:   changes(policy.Change{Status: policy.Removed, Path: "a/x.md"}),
			reg:  registry(known("a/x.md", 1)),
			tree: []policy.File{file("b/x.md", 2)},
			want: policy.Plan{Items: []policy.Item{update("x", "a/x.md", 1, "b/x.md", 2)}},
		},
		{
			name: "DuplicateAddedAfterRegistered_Unchanged",
			cs:   changes(policy.Change{Status: policy.Added, Path: "c/x.md", SHA: sha(2)}),
			reg:  registry(known("b/x.md", 1)),
			want: policy.Plan{
				Unchanged: 1,
				Conflicts: []policy.Conflict{{PolicyName: "x", Winner: "b/x.md", Losers: []string{"c/x.md"}}},
			},
		},
		{
			name: "DuplicateAddedBeforeRegistered_Update",
			cs:   changes(policy.Change{Status: policy.Added, Path: "a/x.md", SHA: sha(2)}),
			reg:  registry(known("b/x.md", 1)),
			want: policy.Plan{
				Items:     []policy.Item{update("x", "b/x.md", 1, "a/x.md", 2)},
				Conflicts: []policy.Conflict{{PolicyName: "x", Winner: "a/x.md", Losers: []string{"b/x.md"}}},
			},
		},
		{
			name: "DuplicateAddedBeforeRegistered_SameContent_Move",
			cs:   changes(policy.Change{Status: policy.Copied, Path: "a/x.md", PreviousPath: "b/x.md", SHA: sha(1)}),
			reg:  registry(known("b/x.md", 1)),
			want: policy.Plan{
				Items:     []policy.Item{move("x", "b/x.md", "a/x.md", 1)},
				Conflicts: []policy.Conflict{{PolicyName: "x", Winner: "a/x.md", Losers: []string{"b/x.md"}}},
			},
		},
		{
			name: "RegisteredPathModified_NewSHA",
			cs: changes(
				policy.Change{Status: policy.Modified, Path: "b/x.md", SHA: sha(5)},
				policy.Change{Status: policy.Added, Path: "c/x.md", SHA: sha(6)},
			),
			reg: registry(known("b/x.md", 1)),
			want: policy.Plan{
				Items:     []policy.Item{update("x", "b/x.md", 1, "b/x.md", 5)},
				Conflicts: []policy.Conflict{{PolicyName: "x", Winner: "b/x.md", Losers: []string{"c/x.md"}}},
			},
		},
		{
			name: "NFDAdded_SameNameAsNFC",
			cs:   changes(policy.Change{Status: policy.Modified, Path: norm.NFD.String("학칙.md"), SHA: sha(2)}),
			reg:  registry(known(norm.NFD.String("학칙.md"), 1)),
			want: policy.Plan{Items: []policy.Item{update("학칙", norm.NFD.String("학칙.md"), 1, norm.NFD.String("학칙.md"), 2)}},
		},
		{
			name: "SkippedByTree_KeepsEntry",
			cs:   changes(policy.Change{Status: policy.Removed, Path: "a/y.md"}, policy.Change{Status: policy.Modified, Path: "a/x.md", SHA: sha(3)}),
			reg:  registry(known("a/x.md", 1), known("a/y.md", 2)),
			tree: []policy.File{{Path: "a/x.md", SHA: sha(3), Size: 0}},
			want: policy.Plan{
				Items:   []policy.Item{del("y", "a/y.md", 2)},
				Skipped: []policy.Skip{{PolicyName: "x", Path: "a/x.md", Reason: "empty"}},
			},
		},
		{
			name: "KeyTooLong_WithoutTree",
			cs:   changes(policy.Change{Status: policy.Added, Path: strings.Repeat("가", 200) + ".md", SHA: sha(3)}),
			want: policy.Plan{Skipped: []policy.Skip{{PolicyName: strings.Repeat("가", 200), Path: strings.Repeat("가", 200) + ".md", Reason: "key too long"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := differ.NeedsTree(tt.cs); got != (tt.tree != nil) {
				t.Fatalf("NeedsTree = %v, test gives tree = %v", got, tt.tree != nil)
			}
			got := planChanges(tt.cs, tt.reg, tt.tree)
			if diff := cmp.Diff(normalize(tt.want), got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFromChanges_WithoutTree_RemovedPathNotKept(t *testing.T) {
	t.Parallel()
	// A caller that skips NeedsTree must not keep a path the changeset removed.
	cs := policy.Changeset{Changes: []policy.Change{{Status: policy.Removed, Path: "a/x.md"}}}
	desired, touched, _, _ := differ.FromChanges(cs, registry(known("a/x.md", 1)), nil, differ.Options{})
	if diff := cmp.Diff(map[string]bool{"x": true}, touched); diff != "" {
		t.Errorf("touched (-want +got):\n%s", diff)
	}
	if len(desired) != 0 {
		t.Errorf("desired = %v, want none", desired)
	}
}

func TestPlan_ScopeAndOrder(t *testing.T) {
	t.Parallel()
	desired := desiredOf(map[string]policy.Desired{
		"학칙":  {PolicyName: "학칙", Path: "학칙.md", SHA: sha(1), Size: 1},
		"b":   {PolicyName: "b", Path: "b.md", SHA: sha(2), Size: 1},
		"B":   {PolicyName: "B", Path: "B.md", SHA: sha(3), Size: 1},
		"out": {PolicyName: "out", Path: "out.md", SHA: sha(4), Size: 1},
	})
	reg := registry(known("a.md", 5), known("z.md", 6), known("b.md", 1), known("kept.md", 7), known("skip.md", 8))
	scope := map[string]bool{"학칙": true, "b": true, "B": true, "a": true, "z": true, "skip": true}
	skipped := []policy.Skip{{PolicyName: "skip", Path: "skip.md", Reason: "empty"}}
	got := differ.Plan(desired, reg, scope, skipped, nil)
	want := policy.Plan{
		Items: []policy.Item{
			add("B", "B.md", 3),
			update("b", "b.md", 1, "b.md", 2),
			add("학칙", "학칙.md", 1),
			del("a", "a.md", 5),
			del("z", "z.md", 6),
		},
		Skipped: skipped,
	}
	if diff := cmp.Diff(normalize(want), got); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
}

func TestPlan_InvalidUTF8Path_StoredAsJSON_Unchanged(t *testing.T) {
	t.Parallel()
	raw := "규정/\xff잘못.md"
	desired := desiredOf(map[string]policy.Desired{"x": {PolicyName: "x", Path: raw, SHA: "s"}})
	// what the registry gives back after a JSON round trip
	known := map[string]policy.Entry{"x": {PolicyName: "x", Path: "규정/\uFFFD잘못.md", SHA: "s"}}
	if p := differ.Plan(desired, known, nil, nil, nil); len(p.Items) != 0 || p.Unchanged != 1 {
		t.Errorf("plan = %+v, want unchanged", p)
	}
}
