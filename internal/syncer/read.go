package syncer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// readForPlan is what the read step read for the plan.
type readForPlan struct {
	mode, reason string            // the mode the run took (an untrusted compare makes it full)
	cs           *policy.Changeset // last...head in an incremental run; nil in a full one
	tree         []policy.File     // the head tree; nil when the plan does not need it
	// windows, when not nil, are a first sync's windows: tree is the first
	// (windows.go)
	windows *windowing
	reg     registryState
	// touched are the names the plan writes from the head whatever the
	// registry read says (stale.go); nil when the registry reads what was
	// written.
	touched map[string]bool
	// unverified says why the run trusted reads it should have waited
	// for (stale.go: no time to wait): it cannot end a success.
	unverified string
}

// registryState is what the registry holds, read under the lease.
type registryState struct {
	entries map[string]policy.Entry // current entries by policyName
	v1      map[string]policy.Entry // legacy v1 entries by title
	// partial is set when only the names an incremental run touches were
	// read; size is how many policies the registry holds.
	partial bool
	size    int
	dead    map[string]policy.DeadLetter
	// queued are the queue entries' versions, sorted by name, read by a
	// full run to repair the queue (differ.RepairQueue), less those that
	// announce their policy's version (differ.QueueCurrent); nil otherwise
	// (an empty queue, listed, is not nil).
	queued []policy.Queued
	// unreadable are the policies whose entry did not decode: kept, not
	// ours to delete, and so is their mirror object (mirrorWants)
	unreadable []string
}

// read reads what the plan needs: in a full run, the head tree and every
// entry; in an incremental one, the compare last...head, then the entries of
// the names it touches (differ.ReadScope: after a run that recorded what
// the registry holds; else every entry), and the head tree when the compare
// cannot say enough (differ.TreeNeeded). The tree and the registry are read
// at once. An untrusted compare makes the run full. With distrust, it
// first learns the names touched since the last commit (stale.go). What
// was read ahead (early.go) is taken, and the archive is asked for ahead.
func (r *run) read(ctx context.Context, st state, mode, reason string, distrust bool, ahead *readAhead) (readForPlan, error) {
	in := readForPlan{mode: mode, reason: reason}
	if mode == differ.ModeIncremental {
		c, err := r.compare(ctx, st)
		switch {
		case errors.Is(err, policy.ErrHeadBehind) && !r.opt.AllowRewind:
			return in, r.rewound(st)
		case errors.Is(err, policy.ErrCompareUntrusted):
			in.mode, in.reason = differ.ModeFull, err.Error()
		case err != nil:
			return in, err
		default:
			in.cs = &c
		}
	}
	if err := r.checkRewind(ctx, st, in.cs); err != nil {
		return in, err
	}
	var err error
	if distrust {
		if in.mode != mode {
			return in, fmt.Errorf("%w: %s", errRangeUnknown, in.reason)
		}
		if in.touched, err = r.touchedSince(ctx, st, in.cs); err != nil {
			return in, err
		}
	}
	var head headFiles
	head, in.reg, err = r.readTreeAndRegistry(ctx, st, in.cs, ahead)
	if in.tree, in.windows = head.files, head.windows; err != nil || in.cs != nil || st.last == "" {
		return in, err
	}
	// a full run after a sync repairs the queue (a first sync: none left),
	// keeping only what the repair may change
	entries := in.reg.entries
	in.reg.queued, err = r.Registry.QueueVersions(ctx, func(q policy.Queued) bool { return differ.QueueCurrent(entries, q) })
	return in, err
}

// compare returns the changes last...head (none when they are the same
// commit: a run that only retries).
func (r *run) compare(ctx context.Context, st state) (policy.Changeset, error) {
	if st.last == st.head {
		return policy.Changeset{Base: st.last, Head: st.head}, nil
	}
	return r.Source.Compare(ctx, st.last, st.head)
}

// readTreeAndRegistry reads the registry and, when the plan needs it, the
// head tree at once; tree is nil when it is not needed.
func (r *run) readTreeAndRegistry(ctx context.Context, st state, cs *policy.Changeset, ahead *readAhead) (headFiles, registryState, error) {
	var (
		tree headFiles
		reg  registryState
	)
	names, held := differ.ReadScope(st.before(), cs)
	var shared treeStrings
	if cs == nil && ahead != nil {
		shared.lend(ahead.tree.ended().files) // read while the lease was taken: every entry listed shares it
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		reg, err = r.readRegistry(gctx, st, names, held, shared.share)
		return err
	})
	// When the registry is read whole, which dead letters there are is
	// known only once it is: the tree may be read after it.
	early := cs == nil || (names != nil && differ.TreeNeeded(st.before(), *cs, held))
	if early {
		g.Go(func() (err error) {
			if tree, err = r.headTree(gctx, st.head, ahead.tree); err == nil && cs == nil {
				shared.lend(tree.files)
				r.prefetchArchive(ctx, st, tree.files, ahead) // beside the listings
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return headFiles{}, reg, err
	}
	if !early && (differ.TreeNeeded(st.before(), *cs, slices.Collect(maps.Keys(reg.dead))) || differ.ModifiesUnknown(*cs, reg.entries)) {
		var err error
		if tree.files, err = r.Source.Tree(ctx, st.head); err != nil {
			return headFiles{}, reg, err
		}
	}
	return tree, reg, nil
}

// headTree is the head tree: the one read early when there is one (a
// first sync's first window, windows.go), else the whole tree.
func (r *run) headTree(ctx context.Context, head string, early *treeRead) (headFiles, error) {
	if tree, ok, err := early.take(ctx); ok {
		return tree, err
	}
	files, err := r.Source.Tree(ctx, head)
	return headFiles{files: files}, err
}

// readRegistry reads what a plan needs of the registry: the policies
// (current and legacy v1) and the dead letters — every one; or, when names
// is not nil, the entries of names and the dead
// letters of held, in one bulk read. Unreadable values are logged, not
// fatal; an unreadable dead letter holds nothing back (a person can drop
// it).
func (r *run) readRegistry(ctx context.Context, st state, names, held []string, share registry.Share) (registryState, error) {
	var (
		reg      registryState
		all      map[string]policy.Entry
		problems map[string]error
	)
	if names != nil {
		sel, err := r.Registry.Select(ctx, names, held)
		if err != nil {
			return reg, err
		}
		all, problems, reg.dead = sel.Entries, sel.Problems, sel.DeadLetters
		reg.partial, reg.size = true, st.prev.Policies
	} else {
		var err error
		if all, problems, reg.dead, err = r.listRegistry(ctx, share); err != nil {
			return reg, err
		}
	}
	for key, perr := range problems {
		r.log.Warn("registry entry unreadable", logkey.Key, key, logkey.Error, perr)
		if name, ok := strings.CutPrefix(key, registry.PolicyPrefix); ok {
			reg.unreadable = append(reg.unreadable, name)
		}
	}
	reg.entries, reg.v1 = differ.SplitV1(all)
	if !reg.partial {
		reg.size = len(reg.entries)
	}
	return reg, nil
}

// listRegistry lists every policy and every dead letter, at once. A failed
// listing fails the run with its own error, the policies' first (a
// listing the other's failure cancelled does not speak for it).
func (r *run) listRegistry(ctx context.Context, share registry.Share) (map[string]policy.Entry, map[string]error, map[string]policy.DeadLetter, error) {
	var (
		dead    map[string]policy.DeadLetter
		deadErr error
		wg      sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Go(func() { dead, deadErr = r.Registry.DeadLetters(ctx) })
	all, problems, err := r.Registry.PoliciesSharing(ctx, share)
	if err != nil {
		cancel()
	}
	wg.Wait()
	if err != nil {
		return nil, nil, nil, err
	}
	var bad *registry.DecodeError
	if errors.As(deadErr, &bad) {
		r.log.Warn("dead letters unreadable", logkey.Error, deadErr)
	} else if deadErr != nil {
		return nil, nil, nil, deadErr
	}
	return all, problems, dead, nil
}

// treeStrings lends a full run's listing of the registry the head tree's
// own strings for the paths and shas it holds (registry.Share), once the
// tree is read: the entries of the policies the head did not change then
// hold no path, sha or name of their own beside the tree's (200,000
// policies: 183 MiB at the run's peak, not 228; docs/bench.md, "A full
// run's memory"). Entries listed before the tree is read are
// copies: the tree read ahead (early.go) is lent before the listing
// starts when it has ended by then. The entries keep the tree's strings,
// including those of files that are not policies, until the run ends.
type treeStrings struct{ files atomic.Pointer[[]policy.File] }

// lend makes the tree, sorted by path (Source.Tree), the one to share; a
// nil tree lends nothing.
func (t *treeStrings) lend(tree []policy.File) {
	if tree != nil {
		t.files.Store(&tree)
	}
}

// share is a registry.Share: the tree's path equal to path, and its sha
// when that file's is sha.
func (t *treeStrings) share(path, sha string) (string, string) {
	files := t.files.Load()
	if files == nil {
		return "", ""
	}
	i, found := slices.BinarySearchFunc(*files, path, func(f policy.File, p string) int { return strings.Compare(f.Path, p) })
	if !found {
		return "", ""
	}
	f := (*files)[i]
	if f.SHA == sha {
		return f.Path, f.SHA
	}
	return f.Path, ""
}
