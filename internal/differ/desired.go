package differ

import (
	"cmp"
	"slices"
	"strings"

	"github.com/knue/syncjob/internal/policy"
)

// Desired is what the head wants of each policy, one per name, sorted by
// name: a slice found by binary search, not a map by name, which held
// 200,000 policies in 20 MB (a slice: 11 MB) at the moment a first sync's
// planning peaks beside the tree's strings and the plan's items
// (docs/bench.md, "How we got here", "Memory, sixth pass").
type Desired []policy.Desired

// NewDesired returns the policies sorted by name; a name given twice
// keeps its first.
func NewDesired(ds ...policy.Desired) Desired {
	d := slices.Clone(ds)
	slices.SortStableFunc(d, func(a, b policy.Desired) int { return strings.Compare(a.PolicyName, b.PolicyName) })
	return slices.CompactFunc(d, func(a, b policy.Desired) bool { return a.PolicyName == b.PolicyName })
}

// Get returns the policy of name, if the head wants it.
func (d Desired) Get(name string) (policy.Desired, bool) {
	i, ok := slices.BinarySearchFunc(d, name, func(e policy.Desired, name string) int { return strings.Compare(e.PolicyName, name) })
	if !ok {
		return policy.Desired{}, false
	}
	return d[i], true
}

// candidates are the policy files of files as desired policies, keeping
// only names in keep (all when keep is nil), sorted by name, then path,
// sha and size: a name's files are side by side, its bytewise-first path
// first, whatever the order of files.
func candidates(files []policy.File, keep map[string]bool) []policy.Desired {
	n := 0
	for _, f := range files {
		if policy.IsPolicyPath(f.Path) {
			n++
		}
	}
	if keep != nil {
		n = min(n, len(keep))
	}
	out := make([]policy.Desired, 0, n)
	for _, f := range files {
		if !policy.IsPolicyPath(f.Path) {
			continue
		}
		name := policy.NameOf(f.Path)
		if keep != nil && !keep[name] {
			continue
		}
		out = append(out, policy.Desired{PolicyName: name, Path: f.Path, SHA: f.SHA, Size: f.Size})
	}
	slices.SortFunc(out, func(a, b policy.Desired) int {
		return cmp.Or(strings.Compare(a.PolicyName, b.PolicyName), strings.Compare(a.Path, b.Path),
			strings.Compare(a.SHA, b.SHA), cmp.Compare(a.Size, b.Size))
	})
	return out
}

// resolve picks each name's winner among the candidates (sorted as
// candidates sorts them) — its bytewise-first path —, reports conflicts
// (several paths give the name) and skips, each sorted by name. The
// desired policies are written over the candidates' own array: no second
// list of every policy.
func resolve(cands []policy.Desired, opt Options) (Desired, []policy.Skip, []policy.Conflict) {
	desired := cands[:0]
	var skipped []policy.Skip
	var conflicts []policy.Conflict
	for i := 0; i < len(cands); {
		win := cands[i]
		var losers []string
		j := i + 1
		for ; j < len(cands) && cands[j].PolicyName == win.PolicyName; j++ {
			if p := cands[j].Path; p != cands[j-1].Path { // a path listed twice is one path
				losers = append(losers, p)
			}
		}
		i = j
		if losers != nil {
			conflicts = append(conflicts, policy.Conflict{PolicyName: win.PolicyName, Winner: win.Path, Losers: losers})
		}
		if reason := opt.SkipReason(win.PolicyName, win.Size); reason != "" {
			skipped = append(skipped, policy.Skip{PolicyName: win.PolicyName, Path: win.Path, Reason: reason})
			continue
		}
		desired = append(desired, win)
	}
	clear(cands[len(desired):]) // let go of the strings of the losers and skips
	return desired, skipped, conflicts
}
