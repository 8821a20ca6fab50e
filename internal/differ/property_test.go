package differ_test

import (
	"maps"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/unicode/norm"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/policy"
)

const propertyIterations = 2000

var (
	genFolders = []string{
		"", "a/", "b/", "B/", "규정/", "규정 모음/학칙/", norm.NFD.String("규정/"), "docs/.hidden/", ".github/", "z/y/",
	}
	genNames = []string{
		"x", "X", "y", "학칙", norm.NFD.String("학칙"), "학칙(개정)․2024 본문", norm.NFD.String("학칙(개정)․2024 본문"),
		"README", "readme", "a:b", "\xff", strings.Repeat("가", 170),
	}
	genExts = []string{".md", ".md", ".md", ".MD", ".txt"}
)

// genSHA returns one of a few blob shas, so that renames keep content and
// folders hold copies. A blob's size follows from its sha: sha 0 is empty,
// sha 1 is too large.
func genSHA(rng *rand.Rand) string { return sha(rng.Intn(12)) }

func sizeOf(s string) int64 {
	switch s {
	case sha(0):
		return 0
	case sha(1):
		return 2 << 20
	}
	return 100
}

func genPath(rng *rand.Rand) string {
	return genFolders[rng.Intn(len(genFolders))] + genNames[rng.Intn(len(genNames))] + genExts[rng.Intn(len(genExts))]
}

func genFile(rng *rand.Rand) policy.File {
	s := genSHA(rng)
	return policy.File{Path: genPath(rng), SHA: s, Size: sizeOf(s)}
}

// tree is a head tree by path.
type tree map[string]policy.File

func genTree(rng *rand.Rand) tree {
	t := make(tree)
	for range rng.Intn(25) {
		f := genFile(rng)
		t[f.Path] = f
	}
	return t
}

// files lists the tree in a random order.
func (t tree) files(rng *rand.Rand) []policy.File {
	fs := slices.Collect(maps.Values(t))
	slices.SortFunc(fs, func(a, b policy.File) int { return strings.Compare(a.Path, b.Path) })
	rng.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
	return fs
}

// genRegistry is a registry that may or may not match any tree.
func genRegistry(rng *rand.Rand) map[string]policy.Entry {
	reg := make(map[string]policy.Entry)
	for range rng.Intn(10) {
		f := genFile(rng)
		if !policy.IsPolicyPath(f.Path) || f.Size == 0 || f.Size > policy.DefaultMaxFileSize {
			continue
		}
		name := policy.NameOf(f.Path)
		if !policy.KeyFits(name) {
			continue
		}
		reg[name] = policy.Entry{PolicyName: name, Path: f.Path, SHA: f.SHA}
	}
	if rng.Intn(4) == 0 {
		reg["legacy"] = policy.Entry{PolicyName: "legacy", Path: "old/legacy.md", SHA: sha(99)}
	}
	return reg
}

// apply writes a plan into a copy of the registry, as the registry adapter would.
func apply(t *testing.T, reg map[string]policy.Entry, plan policy.Plan) map[string]policy.Entry {
	t.Helper()
	out := maps.Clone(reg)
	if out == nil {
		out = make(map[string]policy.Entry)
	}
	seen := make(map[string]bool)
	for _, it := range plan.Items {
		if seen[it.PolicyName] {
			t.Fatalf("plan has %q twice: %+v", it.PolicyName, plan.Items)
		}
		seen[it.PolicyName] = true
		switch it.Action {
		case policy.ActAdd, policy.ActUpdate, policy.ActMove:
			out[it.PolicyName] = policy.Entry{PolicyName: it.PolicyName, Path: it.Path, SHA: it.SHA}
		case policy.ActDelete:
			delete(out, it.PolicyName)
		default:
			t.Fatalf("unknown action %q", it.Action)
		}
	}
	return out
}

func checkPlanShape(t *testing.T, plan policy.Plan) {
	t.Helper()
	sorted := slices.IsSortedFunc(plan.Items, func(a, b policy.Item) int {
		da, db := a.Action == policy.ActDelete, b.Action == policy.ActDelete
		if da != db {
			if da {
				return 1
			}
			return -1
		}
		return strings.Compare(a.PolicyName, b.PolicyName)
	})
	if !sorted {
		t.Errorf("items not puts-then-deletes by name: %+v", plan.Items)
	}
}

func TestProperty_ApplyPlanFromTreeGivesDesired(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(1))
	opt := differ.Options{}
	for i := range propertyIterations {
		head := genTree(rng)
		reg := genRegistry(rng)
		desired, skipped, conflicts := differ.FromTree(head.files(rng), opt)

		d2, s2, c2 := differ.FromTree(head.files(rng), opt)
		if diff := cmp.Diff([]any{desired, skipped, conflicts}, []any{d2, s2, c2}); diff != "" {
			t.Fatalf("iteration %d: FromTree depends on input order (-first +second):\n%s", i, diff)
		}

		want := make(map[string]policy.Entry)
		for _, d := range desired {
			want[d.PolicyName] = policy.Entry{PolicyName: d.PolicyName, Path: d.Path, SHA: d.SHA}
		}
		for _, s := range skipped {
			if _, ok := desired.Get(s.PolicyName); ok {
				t.Fatalf("iteration %d: %q both desired and skipped", i, s.PolicyName)
			}
			if k, ok := reg[s.PolicyName]; ok {
				want[s.PolicyName] = k
			}
		}

		plan := differ.Plan(desired, reg, nil, skipped, conflicts)
		checkPlanShape(t, plan)
		got := apply(t, reg, plan)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("iteration %d: apply(plan) (-want +got):\n%s\ntree %v\nregistry %v\nplan %+v", i, diff, head, reg, plan)
		}

		again := differ.Plan(desired, got, nil, skipped, conflicts)
		if len(again.Items) != 0 || again.Unchanged != len(desired) {
			t.Fatalf("iteration %d: plan for an equal registry: %+v", i, again)
		}
	}
}

// evolve derives a head tree from a base: files kept, removed, modified,
// moved or renamed (keeping or changing content), and added.
func evolve(rng *rand.Rand, base tree) tree {
	head := make(tree)
	for _, f := range base.files(rng) {
		switch rng.Intn(10) {
		case 0: // removed
		case 1: // modified
			s := genSHA(rng)
			head[f.Path] = policy.File{Path: f.Path, SHA: s, Size: sizeOf(s)}
		case 2: // moved to another folder, same name
			name := f.Path[strings.LastIndexByte(f.Path, '/')+1:]
			p := genFolders[rng.Intn(len(genFolders))] + name
			head[p] = policy.File{Path: p, SHA: f.SHA, Size: f.Size}
		case 3: // renamed
			p := genPath(rng)
			head[p] = policy.File{Path: p, SHA: f.SHA, Size: f.Size}
		default:
			head[f.Path] = f
		}
	}
	for range rng.Intn(5) {
		f := genFile(rng)
		head[f.Path] = f
	}
	return head
}

// changeset diffs two trees as GitHub's compare would: removed, added and
// modified paths, with some removed/added pairs reported as renames (always
// when the content is equal and a coin says so, sometimes when it is not).
func changeset(rng *rand.Rand, base, head tree) policy.Changeset {
	var removed, added []policy.File
	var changes []policy.Change
	for _, f := range base.files(rng) {
		h, ok := head[f.Path]
		switch {
		case !ok:
			removed = append(removed, f)
		case h.SHA != f.SHA:
			changes = append(changes, policy.Change{Status: policy.Modified, Path: f.Path, SHA: h.SHA})
		}
	}
	for _, f := range head.files(rng) {
		if _, ok := base[f.Path]; !ok {
			added = append(added, f)
		}
	}
	for _, r := range removed {
		pair := -1
		for j, a := range added {
			if (a.SHA == r.SHA && rng.Intn(2) == 0) || rng.Intn(10) == 0 {
				pair = j
				break
			}
		}
		if pair < 0 {
			changes = append(changes, policy.Change{Status: policy.Removed, Path: r.Path})
			continue
		}
		a := added[pair]
		added = slices.Delete(added, pair, pair+1)
		changes = append(changes, policy.Change{Status: policy.Renamed, Path: a.Path, PreviousPath: r.Path, SHA: a.SHA})
	}
	for _, a := range added {
		changes = append(changes, policy.Change{Status: policy.Added, Path: a.Path, SHA: a.SHA})
	}
	rng.Shuffle(len(changes), func(i, j int) { changes[i], changes[j] = changes[j], changes[i] })
	return policy.Changeset{Base: sha(1000), Head: sha(1001), Changes: changes}
}

func TestProperty_IncrementalEqualsFull(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(2))
	opt := differ.Options{}
	withoutTree := 0
	for i := range propertyIterations {
		base := genTree(rng)
		head := evolve(rng, base)
		cs := changeset(rng, base, head)

		bd, bs, bc := differ.FromTree(base.files(rng), opt)
		reg := apply(t, nil, differ.Plan(bd, nil, nil, bs, bc))

		var headFiles []policy.File
		if differ.NeedsTree(cs) || rng.Intn(4) == 0 {
			headFiles = head.files(rng)
			if headFiles == nil {
				headFiles = []policy.File{}
			}
		}
		desired, touched, skipped, conflicts := differ.FromChanges(cs, reg, headFiles, opt)
		if headFiles == nil {
			withoutTree++
			// The orchestrator reads the content of what it writes and skips
			// what turns out empty or too large.
			desired = slices.DeleteFunc(desired, func(d policy.Desired) bool {
				name := d.PolicyName
				h, ok := head[d.Path]
				if !ok || h.SHA != d.SHA {
					t.Fatalf("iteration %d: desired %q is %s@%s, head has %+v", i, name, d.Path, d.SHA, h)
				}
				reason := opt.SkipReason(name, h.Size)
				if reason != "" {
					skipped = append(skipped, policy.Skip{PolicyName: name, Path: d.Path, Reason: reason})
				}
				return reason != ""
			})
		}
		plan := differ.Plan(desired, reg, touched, skipped, conflicts)
		checkPlanShape(t, plan)
		got := apply(t, reg, plan)

		hd, hs, hc := differ.FromTree(head.files(rng), opt)
		want := apply(t, reg, differ.Plan(hd, reg, nil, hs, hc))

		if headFiles == nil {
			// Without the tree, an untouched winner that was skipped (and so
			// is not in the registry) is invisible; the full run keeps such
			// names as they are, the incremental one may write a loser.
			for _, s := range hs {
				delete(want, s.PolicyName)
				delete(got, s.PolicyName)
			}
		} else {
			var wantConflicts []policy.Conflict
			for _, c := range hc {
				if touched[c.PolicyName] {
					wantConflicts = append(wantConflicts, c)
				}
			}
			if diff := cmp.Diff(wantConflicts, conflicts); diff != "" {
				t.Errorf("iteration %d: conflicts (-want +got):\n%s", i, diff)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("iteration %d: incremental registry (-want full +got incremental):\n%s\nbase %v\nhead %v\nchanges %+v\nplan %+v",
				i, diff, base, head, cs.Changes, plan)
		}
	}
	if withoutTree < propertyIterations/10 {
		t.Errorf("only %d of %d iterations ran without a tree", withoutTree, propertyIterations)
	}
}
