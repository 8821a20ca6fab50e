package differ

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/knue/syncjob/internal/policy"
)

// Skip reasons. A too-large reason is "too large (N bytes > limit)".
const (
	ReasonEmpty      = "empty"
	ReasonKeyTooLong = "key too long"
)

// Options tune what the differ accepts.
type Options struct {
	// MaxFileSize is the largest policy file written, in bytes; 0 means
	// policy.DefaultMaxFileSize.
	MaxFileSize int64
}

func (o Options) maxFileSize() int64 {
	if o.MaxFileSize <= 0 {
		return policy.DefaultMaxFileSize
	}
	return o.MaxFileSize
}

// SkipReason says why a policy of this name and size is not written, or ""
// when it is. A negative size (unknown) passes the size checks: the
// orchestrator calls SkipReason again once it has read the content, so both
// places give the same reasons.
func (o Options) SkipReason(name string, size int64) string {
	switch {
	case !policy.KeyFits(name):
		return ReasonKeyTooLong
	case size == 0:
		return ReasonEmpty
	case size > o.maxFileSize():
		return fmt.Sprintf("too large (%d bytes > %d)", size, o.maxFileSize())
	}
	return ""
}

// FromTree returns the desired state of the registry from a full head tree.
// Files that are not policies (policy.IsPolicyPath) are ignored. Paths that
// give one policyName conflict: the bytewise-first path wins and the conflict
// is reported. A winner that cannot be written (empty, too large, key too
// long) is skipped, not replaced by a loser, so that Plan keeps its entry.
// Skips are sorted by name, conflicts by name; the result does not depend on
// the order of files.
func FromTree(files []policy.File, opt Options) (desired Desired, skipped []policy.Skip, conflicts []policy.Conflict) {
	return resolve(candidates(files, nil), opt)
}

// NeedsTree reports whether deletes for the changeset must be decided from the
// head tree: it has an interim policy path, removes a policy path, renames one away, or changes its type
// (status "changed", e.g. a file that became a symlink and is no longer a
// policy). Without such changes every path the registry knows is still at head.
func NeedsTree(cs policy.Changeset) bool {
	for _, p := range cs.Interim {
		if policy.IsPolicyPath(p) {
			return true // only the head tree says what became of it
		}
	}
	for _, ch := range cs.Changes {
		switch ch.Status {
		case policy.Removed, policy.Changed:
			if policy.IsPolicyPath(ch.Path) {
				return true
			}
		case policy.Renamed:
			if ch.PreviousPath != ch.Path && policy.IsPolicyPath(ch.PreviousPath) {
				return true
			}
		}
	}
	return false
}

// FromChanges returns the desired state of the names an incremental changeset
// touches: every name of a policy path it adds, modifies, removes or renames
// (both the new and the previous path of a rename). Pass touched as Plan's
// scope: a name the changeset does not touch is unchanged. touched is never
// nil, so an empty changeset plans nothing rather than a full run.
//
// With tree (the head tree, needed when NeedsTree is true; nil means not given,
// an empty non-nil slice is an empty head), each touched name
// is decided exactly as FromTree decides it. Without it, the candidates for a
// name are the registry's path (still at head, with the changeset's sha if it
// changed) and the changeset's head paths of that name; sizes are unknown (-1),
// so only long keys are skipped here and the orchestrator skips empty and
// too-large files once it has read them (Options.SkipReason). A conflict is
// then reported only when the changeset touches it.
func FromChanges(cs policy.Changeset, known map[string]policy.Entry, tree []policy.File, opt Options) (desired Desired, touched map[string]bool, skipped []policy.Skip, conflicts []policy.Conflict) {
	touched = Touched(cs)
	if tree != nil {
		desired, skipped, conflicts = resolve(candidates(tree, touched), opt)
		return desired, touched, skipped, conflicts
	}

	// Paths at head according to the changeset, and paths it took away (none
	// when NeedsTree is false; honoured anyway so a caller's mistake cannot
	// keep a removed path).
	head := make(map[string]policy.File)
	gone := make(map[string]bool)
	for _, ch := range cs.Changes {
		switch ch.Status {
		case policy.Removed:
			gone[ch.Path] = true
			continue
		case policy.Renamed:
			if ch.PreviousPath != ch.Path {
				gone[ch.PreviousPath] = true
			}
		}
		if policy.IsPolicyPath(ch.Path) {
			head[ch.Path] = policy.File{Path: ch.Path, SHA: ch.SHA, Size: -1}
		}
	}
	for p := range head {
		delete(gone, p)
	}

	files := slices.Collect(maps.Values(head))
	for name := range touched {
		k, ok := known[name]
		if !ok || gone[k.Path] || !policy.IsPolicyPath(k.Path) || policy.NameOf(k.Path) != name {
			continue
		}
		if _, changed := head[k.Path]; !changed {
			files = append(files, policy.File{Path: k.Path, SHA: k.SHA, Size: -1})
		}
	}
	desired, skipped, conflicts = resolve(candidates(files, touched), opt)
	return desired, touched, skipped, conflicts
}

// Touched returns every policy name a changeset touches: the name of each
// policy path it adds, modifies, removes or renames (both the new and the
// previous path of a rename), and of each interim path. Never nil.
func Touched(cs policy.Changeset) map[string]bool {
	touched := TouchedNames(cs.Interim)
	for _, ch := range cs.Changes {
		if policy.IsPolicyPath(ch.Path) {
			touched[policy.NameOf(ch.Path)] = true
		}
		if ch.Status == policy.Renamed && policy.IsPolicyPath(ch.PreviousPath) {
			touched[policy.NameOf(ch.PreviousPath)] = true
		}
	}
	return touched
}

// Plan compares the desired state with what the registry knows. scope nil is
// a full run: every known name is in scope. Otherwise only names in scope are
// considered, and a known name out of scope is left alone. Skipped names are
// never added, updated, moved or deleted. Items are puts (add, update, move)
// before deletes, each group by policyName bytewise. An update and a move
// carry OldPath and OldSHA; a delete carries only OldPath and OldSHA, the
// entry it removes.
func Plan(desired Desired, known map[string]policy.Entry, scope map[string]bool, skipped []policy.Skip, conflicts []policy.Conflict) policy.Plan {
	isSkipped := make(map[string]bool, len(skipped))
	for _, s := range skipped {
		isSkipped[s.PolicyName] = true
	}
	inScope := func(name string) bool { return scope == nil || scope[name] }
	plan := policy.Plan{
		// room for the items the plan has (countItems), no more: at
		// 50,000 policies a slice grown by appends holds up to twice the
		// items' 5.6 MB
		Items:     make([]policy.Item, 0, countItems(desired, known, inScope, isSkipped)),
		Skipped:   append([]policy.Skip{}, skipped...),
		Conflicts: append([]policy.Conflict{}, conflicts...),
	}

	for _, d := range desired {
		name := d.PolicyName
		if !inScope(name) || isSkipped[name] {
			continue
		}
		k, ok := known[name]
		switch {
		case !ok:
			plan.Items = append(plan.Items, policy.Item{Action: policy.ActAdd, PolicyName: name, Path: d.Path, SHA: d.SHA})
		case k.SHA != d.SHA:
			plan.Items = append(plan.Items, policy.Item{Action: policy.ActUpdate, PolicyName: name, Path: d.Path, SHA: d.SHA, Old: policy.OldOf(k.Path, k.SHA)})
		case strings.ToValidUTF8(k.Path, "\uFFFD") != strings.ToValidUTF8(d.Path, "\uFFFD"):
			// A registry stores paths as JSON, where invalid UTF-8 became
			// U+FFFD: compare like with like, or such a path moves every run.
			plan.Items = append(plan.Items, policy.Item{Action: policy.ActMove, PolicyName: name, Path: d.Path, SHA: d.SHA, Old: policy.OldOf(k.Path, k.SHA)})
		default:
			plan.Unchanged++
		}
	}
	for name, k := range known {
		if _, ok := desired.Get(name); ok || !inScope(name) || isSkipped[name] {
			continue
		}
		plan.Items = append(plan.Items, policy.Item{Action: policy.ActDelete, PolicyName: name, Old: policy.OldOf(k.Path, k.SHA)})
	}
	slices.SortFunc(plan.Items, func(a, b policy.Item) int {
		return cmp.Or(
			cmp.Compare(isDelete(a), isDelete(b)),
			strings.Compare(a.PolicyName, b.PolicyName),
		)
	})
	return plan
}

// countItems is how many items Plan makes at most: a name in scope and not skipped
// that is desired and not known the same (sha and path), or known and not
// desired.
func countItems(desired Desired, known map[string]policy.Entry, inScope func(string) bool, isSkipped map[string]bool) int {
	n := 0
	for _, d := range desired {
		name := d.PolicyName
		if k, ok := known[name]; inScope(name) && !isSkipped[name] && (!ok || k.SHA != d.SHA || k.Path != d.Path) {
			n++
		}
	}
	for name := range known {
		if _, ok := desired.Get(name); !ok && inScope(name) && !isSkipped[name] {
			n++
		}
	}
	return n
}

func isDelete(it policy.Item) int {
	if it.Action == policy.ActDelete {
		return 1
	}
	return 0
}
