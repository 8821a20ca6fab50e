package syncer

import (
	"context"
	"errors"
	"maps"
	"sync"

	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/retry"
	"github.com/knue/syncjob/internal/strs"
)

// A first sync into an empty registry plans and applies its policies in
// windows of names when they are more than Options.FirstSyncWindow, so
// that its memory is a window's, not the tree's (docs/bench.md, "The
// windowed first sync"). A policy is in window hash(name) mod n: every
// per-name concern (a name's files and their conflict, its queue entry,
// its dead letter) stays inside one window. The tree's first listing,
// beside the lease, keeps window 0 and doubles n while it holds more than
// a window's worth, so n is known without a listing of its own; each later
// window lists the tree again and reads the archive again. What crosses
// windows is counted, not held: the plan keeps its first
// policy.MaxRunChanges changes (policy.Plan.Omitted counts the rest), the
// skips, conflicts, failures and the budget's spend. The run is recorded
// once, after the last window or when one stops it.
//
// A run takes windows only when its registry holds nothing of the job's
// (no policy, no dead letter, no write waiting for retry) and its content
// mirror, if any, no object under its prefix: with nothing to delete,
// move or repair, no concern spans windows. A dry run lists its whole plan,
// and its tree whole. With a mirror a window is a quarter of the size
// (mirrorDivisor), and what the mirror's windows did is counted
// (mirrorDone). A run that finds a window it may not take lists the tree
// again, whole. A first sync cut short (its deadline, the write budget)
// leaves the windows it did not reach waiting; the next run is full and
// whole, as the daily full run is.

// DefaultFirstSyncWindow is how many policies a first sync plans at once,
// when Options leave it 0: a 50,000-policy first sync is one window (the
// bench's 50,000 row), 200,000 are four.
const DefaultFirstSyncWindow = 60_000

// mirrorDivisor is how much smaller a window is with a content mirror:
// its maps by key and its uploads' buffers more than double what a policy
// holds while its window runs (docs/bench.md).
const mirrorDivisor = 4

// maxWindows bounds how many windows a first sync takes.
const maxWindows = 1 << 10

// windowing is a first sync's windows: how many (n), found by its first
// listing, and how many policy files the tree and window 0 hold.
type windowing struct {
	size     int // most policy files a window holds as the listing counts them
	mu       sync.Mutex
	n        int
	kept     map[uint64]uint32 // the policy files window 0 holds at n: path hash → name hash
	policies int               // policy files in the tree
	first    int               // policy files in window 0
}

// nameHash is the hash that places a policy file's name in its window:
// FNV-1a (hash/fnv's New32a), over the string itself, allocating nothing
// (a hasher and a copy a file were 30 MB of garbage at 120,000 files).
func nameHash(path string) uint32 {
	name := policy.NameOf(path)
	h := uint32(2166136261)
	for i := range len(name) {
		h = (h ^ uint32(name[i])) * 16777619
	}
	return h
}

// pathHash is FNV-1a (hash/fnv's New64a) of path, allocating nothing.
func pathHash(path string) uint64 {
	h := uint64(14695981039346656037)
	for i := range len(path) {
		h = (h ^ uint64(path[i])) * 1099511628211
	}
	return h
}

// keepFirst is the first listing's filter: window 0 of n, doubling n while
// window 0 holds more than size policy files. Files are counted by path,
// once: a walked tree lists the entries of a listing GitHub cut again,
// and a retry starts a listing over (counted twice, 50,000 policies took
// two windows). A file that is not a policy is kept while n is 1, as the
// whole tree has it; in windows the plan reads policy files only, and
// firstWindow lets go of those kept before n grew.
func (w *windowing) keepFirst(path string) bool {
	if !policy.IsPolicyPath(path) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.n == 1 // the whole tree so far; in windows the plan reads policy files only
	}
	name, p := nameHash(path), pathHash(path)
	w.mu.Lock()
	defer w.mu.Unlock()
	if name%uint32(w.n) != 0 {
		return false
	}
	w.kept[p] = name
	for len(w.kept) > w.size && w.n < maxWindows {
		w.n *= 2
		maps.DeleteFunc(w.kept, func(_ uint64, h uint32) bool { return h%uint32(w.n) != 0 })
	}
	return name%uint32(w.n) == 0
}

// keep is the filter of window k's listing: its policy files.
func (w *windowing) keep(k int) func(string) bool {
	return func(path string) bool {
		return policy.IsPolicyPath(path) && int(nameHash(path)%uint32(w.n)) == k
	}
}

// firstWindow lists the head tree for a first sync: the whole tree when it
// holds no more than a window, else window 0's policy files (windows nil:
// the whole tree). The files window 0 dropped as n grew are let go: the
// kept ones' strings are copied out of the listing's chunks.
func (r *run) firstWindow(ctx context.Context, head string) (headFiles, error) {
	size := r.opt.FirstSyncWindow
	if r.Mirror != nil {
		size = max(size/mirrorDivisor, 1)
	}
	w := &windowing{size: size, n: 1, kept: map[uint64]uint32{}}
	files, policies, err := r.treeKeeping(ctx, head, w.keepFirst)
	if err != nil || w.n == 1 {
		return headFiles{files: files}, err
	}
	w.policies = policies
	var c strs.Chunks
	first := w.keep(0)
	kept := make([]policy.File, 0, len(w.kept))
	w.kept = nil
	for _, f := range files {
		if first(f.Path) {
			kept = append(kept, policy.File{Path: c.Copy(f.Path), SHA: c.Copy(f.SHA), Size: f.Size})
		}
	}
	w.first = len(kept)
	return headFiles{files: kept, windows: w}, nil
}

// TreeKeeper is a Source that lists a commit's tree keeping only the files
// keep takes, never holding the others (internal/github), and counts the
// tree's policy files.
type TreeKeeper interface {
	TreeKeeping(ctx context.Context, commit string, keep func(path string) bool) (files []policy.File, policies int, err error)
}

// treeKeeping lists the head tree's files that keep takes: through the
// Source's own filter when it has one, else from the whole tree.
func (r *run) treeKeeping(ctx context.Context, head string, keep func(string) bool) ([]policy.File, int, error) {
	if tk, ok := r.Source.(TreeKeeper); ok {
		return tk.TreeKeeping(ctx, head, keep)
	}
	tree, err := r.Source.Tree(ctx, head)
	if err != nil {
		return nil, 0, err
	}
	var kept []policy.File
	policies := 0
	for _, f := range tree {
		if policy.IsPolicyPath(f.Path) {
			policies++
		}
		if keep(f.Path) {
			kept = append(kept, f)
		}
	}
	return kept, policies, nil
}

// windowsOrWhole keeps the windows of a first sync that may take them, and
// otherwise lists the tree again, whole (see above).
func (r *run) windowsOrWhole(ctx context.Context, st state, in readForPlan, m *mirrorRun) (readForPlan, error) {
	w := in.windows
	if w == nil {
		return in, nil
	}
	var why string
	switch { // a dry run lists its tree whole (readTreeEarly)
	case in.cs != nil || in.touched != nil:
		why = "not a first sync"
	case len(in.reg.entries)+len(in.reg.v1)+len(in.reg.unreadable) > 0:
		why = "the registry holds policies"
	case len(in.reg.dead)+len(st.pending)+len(st.revisit) > 0:
		why = "writes wait for retry"
	}
	if why == "" {
		var err error
		if why, err = r.mirrorWindows(ctx, m); err != nil {
			return in, err
		}
	}
	if why == "" {
		r.log.Info("first sync in windows", logkey.FirstSyncWindows, w.n, logkey.Files, w.policies)
		return in, nil
	}
	r.log.Info("first sync planned whole", logkey.FirstSyncWindows, w.n, logkey.Reason, why)
	in.windows = nil
	var err error
	in.tree, err = r.Source.Tree(ctx, st.head)
	return in, err
}

// laterWindows plans and applies windows 1 to n-1, after window 0's pass,
// gathering into rep what the record needs of them all. A window that
// left writes waiting (the budget, the deadline) ends the run's windows,
// and so do the deadline and a spent budget: the policy files of the
// windows not reached wait for the next run. A window the deadline cut
// before it applied anything (its listing, its archive, a retry that
// would end past it) is one not reached. Failures that could not be
// recorded for retry fail the run after every window, as a whole run's
// do. base is the registry's write count before window 0's pass: each
// window's budget counts what the windows before it wrote.
func (r *run) laterWindows(ctx context.Context, rep *report, reg registryState, w *windowing, base int64) error {
	var g gathered
	g.fold(rep)
	defer g.restore(rep)
	reached := w.first
	stop := func(k int, why string, deadline bool) error {
		g.unreached = max(w.policies-reached, 0)
		g.cutShort = deadline || len(g.late) > 0 || r.outOfTime(ctx)
		r.log.Warn("first sync stopped before its last window", logkey.FirstSyncWindow, k+1, logkey.FirstSyncWindows, w.n, logkey.Unreached, g.unreached, logkey.Reason, why)
		return nil
	}
	for k := 1; k < w.n; k++ {
		switch {
		case r.outOfTime(ctx):
			return stop(k, "out of time", true)
		case g.waiting > 0:
			return stop(k, "writes wait", false)
		}
		if spent, err := r.budgetSpent(ctx, r.Registry.Usage().Writes-base); err != nil {
			if onlyTime(ctx, err) {
				return stop(k, "out of time", true)
			}
			return err
		} else if spent {
			return stop(k, "the daily write budget is spent", false)
		}
		r.phases.enter("plan")
		r.log.Info("first sync window", logkey.FirstSyncWindow, k+1, logkey.FirstSyncWindows, w.n)
		tree, _, err := r.treeKeeping(ctx, rep.state.head, w.keep(k))
		rep.wrote = false // this window's: set again below
		if err == nil {
			in := readForPlan{mode: rep.mode, reason: rep.reason, tree: tree, reg: reg}
			err = r.pass(ctx, rep, &in, r.Registry.Usage().Writes-base)
		}
		applied := rep.wrote
		rep.wrote = true // the windows before it wrote
		if err != nil && !applied && onlyTime(ctx, err) {
			dropWindow(rep)
			return stop(k, "out of time", true) // however much time is left: a retry would end past it
		}
		reached += len(tree)
		g.fold(rep)
		if err != nil {
			return err
		}
	}
	return nil
}

// onlyTime says whether a later window that applied nothing stopped for
// the run's time alone: the deadline passed, or a retry (or the
// registry's rate window, or a Cloudflare 429's block) would end past it,
// as the apply step's writes wait for the same. GitHub's rate limit is
// not: a whole run fails naming it (DESIGN: "a primary limit ... aborts
// the run with the time to retry"); nor is a configuration error.
func onlyTime(ctx context.Context, err error) bool {
	if cut := (*retry.PastDeadline)(nil); errors.As(err, &cut) {
		return true // a retry the run would make (a short secondary limit's too), past its deadline
	}
	var rl *policy.RateLimitError
	if (errors.As(err, &rl) && rl.API == "github") || errors.Is(err, policy.ErrConfig) {
		return false
	}
	return errors.Is(ctx.Err(), context.DeadlineExceeded) || timeUp(err, deadlineOf(ctx))
}
