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
//     read before the lease until now, so beside it is no earlier.
//
// A refused or failed lease waits for both and drops them: the run writes
// nothing and records itself as before.

// leaseStep takes the lease (takeLease) and makes the reads above beside
// it. The tree is handed over by the returned treeRead (nil when none was
// read early); drop it when the run ends.
func (r *run) leaseStep(ctx context.Context, st state, mode string) (state, lease, *treeRead, error) {
	var early *treeRead
	if mode == differ.ModeFull {
		early = r.readTreeEarly(ctx, st.head)
	}
	type pendingRead struct {
		pending map[string]policy.QueueEntry
		revisit []string
		err     error
	}
	var pc chan pendingRead
	if st.pendingLater {
		pc = make(chan pendingRead, 1)
		go func() {
			var p pendingRead
			p.pending, p.revisit, p.err = r.pendingRetries(ctx, st.prev, st.unclean)
			pc <- p
		}()
	}
	l, err := r.takeLease(ctx, st, mode)
	if pc != nil {
		p := <-pc
		if err == nil && p.err != nil {
			err = p.err
		}
		if p.err == nil {
			st.pending, st.revisit, st.pendingLater = p.pending, p.revisit, false
		}
	}
	return st, l, early, err
}

// treeRead is a head tree being read beside the lease write.
type treeRead struct {
	done   chan struct{}
	cancel context.CancelFunc
	tree   []policy.File
	err    error
}

// readTreeEarly starts reading the head tree.
func (r *run) readTreeEarly(ctx context.Context, head string) *treeRead {
	ctx, cancel := context.WithCancel(ctx)
	t := &treeRead{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(t.done)
		t.tree, t.err = r.Source.Tree(ctx, head)
	}()
	return t
}

// take waits for the tree and hands it over (the treeRead keeps no
// reference: the run lets it go once planned); ok is false when t is nil
// or was taken already.
func (t *treeRead) take(ctx context.Context) (tree []policy.File, ok bool, err error) {
	if t == nil || t.taken() {
		return nil, false, nil
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		return nil, true, context.Cause(ctx)
	}
	tree, err = t.tree, t.err
	t.cancel()
	t.tree, t.err, t.done = nil, nil, nil
	return tree, true, err
}

func (t *treeRead) taken() bool { return t.done == nil }

// drop ends the read if it is still going and lets the tree go.
func (t *treeRead) drop() {
	if t == nil || t.taken() {
		return
	}
	t.cancel()
	<-t.done
	t.tree, t.done = nil, nil
}
