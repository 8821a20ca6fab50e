package syncer

import (
	"context"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/policy"
)

// The lease step makes, beside its one write, the reads that need not wait
// for it, so that a first sync pays one round trip for all of them instead
// of one each (docs/bench.md, "Round trips"). Only the reads the plan takes
// of the registry must follow the lease (read.go): those stay after it.
//   - A full run's head tree: GitHub's, nothing of the registry.
//   - The writes waiting for retry (pendingRetries), when the state step left
//     them because the mode was full whatever they are (state.go): they were
//     read before the lease until now, so beside it is no earlier. Only the
//     plan needs them, so the read goes on beside the registry's listings
//     (read.go), which it no longer holds up: after a first sync cut by
//     its deadline, both list every key written so far, a page at a time
//     (docs/bench.md, "A first sync across deadlines, with the walk").
//
// A refused or failed lease waits for both: the run writes nothing, drops
// the tree, and records what waits for retry as far as it was read.

// Once the tree says the titles step will read more files than the
// archive threshold, the read step asks for the archive (its link, and the
// download up to its headers) beside the registry's listings: a read too,
// taken by the titles step (github.Source.PrefetchArchive). A run into an
// empty registry reads every file: its link is asked for at once, beside
// the tree and the lease, before the tree says how many files there are.
// That costs a first sync of no more files than the threshold one request
// it does not use (it reads blobs, as before); every larger first sync
// gets its link a round trip sooner. Its download goes once the lease is
// taken and the tree, as it streams by, has shown more files than the
// threshold: not after the whole tree.

// readAhead are the reads a run started before the step that takes them;
// the run drops what no step took when it ends (finish).
type readAhead struct {
	tree    *treeRead              // a full run's head tree; nil: none
	pending *aheadRead[pendingSet] // the writes waiting for retry; nil: read by the state step
	archive []func()               // stop the archive's prefetch
}

// drop ends the reads no step took.
func (a *readAhead) drop() {
	if a == nil {
		return
	}
	a.tree.drop()
	a.pending.drop()
	for _, stop := range a.archive {
		stop()
	}
	a.archive = nil
}

// ArchivePrefetcher is a Source that can start reading a commit's archive
// ahead of the titles step (internal/github).
type ArchivePrefetcher interface {
	// PrefetchArchive starts reading commit's archive when reading files
	// files would take it, for the next read of the commit; stop lets go
	// of what no read took.
	PrefetchArchive(ctx context.Context, commit string, files int) (stop func())
	// DownloadWhenListed lets a prefetch whose count was not known
	// download as soon as the commit's tree has shown more files than the
	// threshold.
	DownloadWhenListed(commit string)
}

// prefetchArchive starts reading the head's archive when the tree says a
// full run will read more files than its Source reads one by one: at least
// the tree's policies the registry cannot hold yet (after the last run it
// held prev.Policies; a first sync, none). A nil tree means every file, how
// many not known yet: a run into an empty registry asks before the tree is
// read, and the Source asks for the link at once, the download once the
// lease lets it (leaseStep) and the tree has shown more files than its
// threshold.
func (r *run) prefetchArchive(ctx context.Context, st state, tree []policy.File, ahead *readAhead) {
	pf, ok := r.Source.(ArchivePrefetcher)
	if !ok {
		return
	}
	n := -1
	if tree != nil {
		n = 0
		for _, f := range tree {
			if policy.IsPolicyPath(f.Path) {
				n++
			}
		}
	}
	if st.prev != nil && n >= 0 {
		n -= st.prev.Policies
	}
	ahead.archive = append(ahead.archive, pf.PrefetchArchive(ctx, st.head, n))
}

// leaseStep takes the lease (takeLease) and makes the reads above beside
// it. The tree is handed over by the returned readAhead; drop it when the
// run ends.
func (r *run) leaseStep(ctx context.Context, st state, mode string) (state, lease, *readAhead, error) {
	ahead := &readAhead{}
	first := mode == differ.ModeFull && st.last == "" && (st.prev == nil || st.prev.Policies == 0)
	if first {
		// every file will be read: the link at once, beside the tree; the
		// download once the lease is taken and the tree has shown more
		// files than the threshold
		r.prefetchArchive(ctx, st, nil, ahead)
	}
	if mode == differ.ModeFull {
		ahead.tree = r.readTreeEarly(ctx, st.head, first)
	}
	if st.pendingLater {
		ahead.pending = r.readPendingEarly(ctx, st)
	}
	l, err := r.takeLease(ctx, st, mode)
	if pf, ok := r.Source.(ArchivePrefetcher); ok && first && err == nil {
		pf.DownloadWhenListed(st.head)
	}
	if err != nil {
		st, _ = ahead.takePending(ctx, st, nil) // the record says what waits, as far as it was read
	}
	return st, l, ahead, err
}

// pendingSet is what the read of the writes waiting for retry returns
// (pendingRetries), read ahead beside the lease and the registry's
// listings (state.pendingLater).
type pendingSet struct {
	pending map[string]policy.QueueEntry
	revisit []string
}

// readPendingEarly starts reading the writes waiting for retry.
func (r *run) readPendingEarly(ctx context.Context, st state) *aheadRead[pendingSet] {
	return startRead(ctx, func(ctx context.Context) (pendingSet, error) {
		pending, revisit, err := r.pendingRetries(ctx, st)
		return pendingSet{pending, revisit}, err
	})
}

// takePending waits for the writes waiting for retry when they are read
// ahead, and puts them in st; the error is the read's, else err. A run
// whose ctx ends meanwhile (its lease lost) waits no longer: the error is
// then why it ended.
func (a *readAhead) takePending(ctx context.Context, st state, err error) (state, error) {
	if a == nil {
		return st, err
	}
	w, ok, perr := a.pending.take(ctx)
	switch {
	case !ok:
		return st, err
	case perr != nil:
		return st, perr
	}
	st.pending, st.revisit, st.pendingLater, st.pendingRead = w.pending, w.revisit, false, true
	return st, err
}

// treeRead is a head tree being read beside the lease write.
type treeRead = aheadRead[headFiles]

// headFiles is the head tree as read: every file, or a first sync's first
// window of them (windows.go).
type headFiles struct {
	files   []policy.File
	windows *windowing // nil: the whole tree
}

// readTreeEarly starts reading the head tree: a first sync's, in windows
// when it is large (windows.go), but a dry run's whole (it lists its whole
// plan: a window's listing would be listed again).
func (r *run) readTreeEarly(ctx context.Context, head string, first bool) *treeRead {
	return startRead(ctx, func(ctx context.Context) (headFiles, error) {
		if first && !r.opt.DryRun {
			return r.firstWindow(ctx, head)
		}
		files, err := r.Source.Tree(ctx, head)
		return headFiles{files: files}, err
	})
}

// aheadRead is a read started before the step that takes it.
type aheadRead[T any] struct {
	done   chan struct{}
	cancel context.CancelFunc
	val    T
	err    error
}

// startRead starts read, under a context of its own.
func startRead[T any](ctx context.Context, read func(context.Context) (T, error)) *aheadRead[T] {
	ctx, cancel := context.WithCancel(ctx)
	a := &aheadRead[T]{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(a.done)
		a.val, a.err = read(ctx)
	}()
	return a
}

// take waits for the read and hands over what it read (a keeps no
// reference: the run lets a tree go once planned); ok is false when a is
// nil or was taken already. When ctx ends first, its cause is the error
// and the read is left for drop.
func (a *aheadRead[T]) take(ctx context.Context) (v T, ok bool, err error) {
	if a == nil || a.taken() {
		return v, false, nil
	}
	select {
	case <-a.done:
	case <-ctx.Done():
		return v, true, context.Cause(ctx)
	}
	v, err = a.val, a.err
	a.cancel()
	a.val, a.err, a.done = *new(T), nil, nil
	return v, true, err
}

func (a *aheadRead[T]) taken() bool { return a.done == nil }

// ended is what the read ahead read, left to take, when it has ended
// without an error; the zero value while it goes on, and when there is
// none.
func (a *aheadRead[T]) ended() (v T) {
	if a == nil || a.taken() {
		return v
	}
	select {
	case <-a.done:
		if a.err == nil {
			return a.val
		}
	default:
	}
	return v
}

// drop ends the read if it is still going and lets what it read go.
func (a *aheadRead[T]) drop() {
	if a == nil || a.taken() {
		return
	}
	a.cancel()
	<-a.done
	a.val, a.done = *new(T), nil
}
