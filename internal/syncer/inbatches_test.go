package syncer_test

import (
	"context"
	"sync"
	"testing"

	"github.com/knue/syncjob/internal/syncer"
)

// heldWrites counts the registry writes a run holds made and not yet let
// go, and the most it held at once.
type heldWrites struct {
	mu          sync.Mutex
	now, peak   int
	made, freed int
}

func (h *heldWrites) tell(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now += n
	h.peak = max(h.peak, h.now)
	if n > 0 {
		h.made += n
	} else {
		h.freed -= n
	}
}

// A first sync makes each batch's writes from the plan when the batch is
// sent: it holds at most the batches in flight, not the plan's 2 writes a
// policy. Writes made up front (every op built before the first batch goes)
// hold 120 or 240 at once; a batch made before a slot is free for it, 30.
func TestApply_MakesWritesBatchByBatch_HoldsOnlyTheBatchesInFlight(t *testing.T) {
	t.Parallel()
	const policies, batch, concurrency = 120, 10, 2
	r := newCFRig(t, policies, nil)
	var held heldWrites
	opt := syncer.Options{Full: true, BatchSize: batch, Concurrency: concurrency}
	res, err := r.run(syncer.WatchWrites(context.Background(), held.tell), opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Added != policies || res.Summary.ErrorCount != 0 {
		t.Fatalf("added %d, %d errors: want %d, 0", res.Summary.Added, res.Summary.ErrorCount, policies)
	}
	if held.made != 2*policies || held.freed != held.made || held.now != 0 {
		t.Fatalf("made %d writes, let go of %d, %d still held: want %d made, every one let go", held.made, held.freed, held.now, 2*policies)
	}
	if bound := concurrency * batch; held.peak > bound {
		t.Fatalf("held %d writes at once: want at most %d (%d batches in flight)", held.peak, bound, concurrency)
	}
	if got := len(r.policyNames()); got != policies {
		t.Fatalf("%d policies in the registry: want %d", got, policies)
	}
}
