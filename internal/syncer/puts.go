package syncer

import (
	"context"
	"iter"
	"sync"
	"sync/atomic"

	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/queue"
	"github.com/knue/syncjob/internal/registry"
)

// putGroup is a run of the plan's puts: its announcements go in one batch
// and its entries in one batch, sent once those announcements landed. Ops
// are made when their batch is sent, so a waiting group holds nothing but
// where its items are.
type putGroup struct {
	announce func(yield func(op) bool) // nil: none
	publish  func(yield func(op) bool) // nil: none
	// items are a group of the plan's items, whose batches refer to them
	// by index (itemWrites) rather than by ops: announce and publish are
	// then nil
	items []policy.Item
	// size is how many writes each batch of the group has at most: its
	// batch is made at that size, not grown by appends (a batch of 10,000
	// grown so allocated twice its 0.8 MB)
	size int
}

// putGroups are the plan's puts in groups of at most size entries, in plan
// order (each group's announcements are those of its items); then the
// queue work's announcements and the mirror's repaired entries, size a
// group.
func (p *planWrites) putGroups(size int) iter.Seq[putGroup] {
	return func(yield func(putGroup) bool) {
		items, lo, n := p.plan.Items, 0, 0
		for i, it := range items {
			if removes(it) {
				continue
			}
			if n++; n == size {
				if !yield(p.itemGroup(items[lo : i+1])) {
					return
				}
				lo, n = i+1, 0
			}
		}
		if n > 0 && !yield(p.itemGroup(items[lo:])) {
			return
		}
		for part := range chunks(p.work.Requeue, size) {
			g := putGroup{size: len(part), announce: func(yield func(op) bool) {
				for _, q := range part {
					if !yield(p.op(q.PolicyName, registry.PutQueue(q))) {
						return
					}
				}
			}}
			if !yield(g) {
				return
			}
		}
		for part := range chunks(repairedEntries(p.reg, p.m), size) {
			g := putGroup{size: len(part), publish: func(yield func(op) bool) {
				for _, o := range part {
					if !yield(p.op(o.name, o.w)) {
						return
					}
				}
			}}
			if !yield(g) {
				return
			}
		}
	}
}

// itemGroup is the group of items: the announcement of each add and
// update, the entry of each. Each write makes its entry from its item when
// the store takes it (itemWrites): a batch of 10,000 holds an index each,
// not an entry each (docs/bench.md, "How we got here", "Memory, fifth
// pass", "eighth pass").
func (p *planWrites) itemGroup(items []policy.Item) putGroup {
	return putGroup{size: len(items), items: items}
}

// announcement is the queue entry that announces the item.
func (p *planWrites) announcement(it policy.Item) policy.QueueEntry {
	return policy.QueueEntry{PolicyName: it.PolicyName, SHA: it.SHA, Operation: queue.Op(it), CreatedAt: p.now, FileNo: p.entry(it).V1().FileNo}
}

// chunks are s in parts of at most size.
func chunks[T any](s []T, size int) iter.Seq[[]T] {
	return func(yield func([]T) bool) {
		for lo := 0; lo < len(s); lo += size {
			if !yield(s[lo:min(lo+size, len(s))]) {
				return
			}
		}
	}
}

// writePuts sends the plan's puts group by group (putGroups): a group's
// entries go as soon as its own announcements landed, not after every
// announcement of the plan, and leave out a policy whose announcement
// failed or waits (a queue: entry never lands after its policy: value). A
// free slot takes the next group's announcements while fewer than twice
// the slots of groups wait for their entries, else the entries of a group
// whose announcements landed: the slots stay full (a first sync of 1,000
// policies at 50 a batch takes three rounds of 16 requests, not four), and
// a run stopped by its deadline leaves few policies announced but not
// published. It returns how many writes it sent or kept for the next run.
func (r *run) writePuts(ctx context.Context, w *planWrites, fails *failures, count *counter) int {
	slots := r.opt.batchesInFlight()
	lead := 2 * slots
	next, stop := iter.Pull(w.putGroups(r.opt.BatchSize))
	defer stop()
	sem := make(chan struct{}, slots)
	landed := make(chan putGroup, lead) // never more than lead wait
	var wg sync.WaitGroup
	var sent atomic.Int64
	waiting := 0 // groups whose announcements were taken, entries not yet
	for more := true; more || waiting > 0; {
		if more && waiting < lead {
			sem <- struct{}{}
			g, ok := next()
			if more = ok; !ok {
				<-sem
				continue
			}
			waiting++
			wg.Go(func() { // the batch is made (encoded) in its slot, beside the others
				defer func() { <-sem; landed <- g }()
				r.sendBatch(ctx, logkey.Puts, r.keep(w, g, true, fails.skip, count, &sent), fails, count)
			})
			continue
		}
		g := <-landed
		waiting--
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r.sendBatch(ctx, logkey.Puts, r.keep(w, g, false, fails.skip, count, &sent), fails, count)
		})
	}
	wg.Wait()
	return int(sent.Load())
}

// keep makes the batch of the group's announcements (announce) or
// entries, made at size (the most the group has), but those whose policy
// skip names (let go and counted done at once), and counts them in sent.
func (r *run) keep(p *planWrites, g putGroup, announce bool, skip func(string) bool, count *counter, sent *atomic.Int64) batch {
	if g.items != nil {
		return r.keepItems(p, g.items, announce, skip, count, sent)
	}
	seq := g.publish
	if announce {
		seq = g.announce
	}
	if seq == nil {
		return batch{}
	}
	ops := make([]op, 0, g.size)
	for o := range seq {
		if skip(o.name) {
			r.madeWrites(-1)
			count.add(1)
			continue
		}
		ops = append(ops, o)
	}
	sent.Add(int64(len(ops)))
	return batch{ops: ops}
}

// keepItems is keep for a group of the plan's items: the announcement of
// each add and update (announce), else the entry of each, by index.
func (r *run) keepItems(p *planWrites, items []policy.Item, announce bool, skip func(string) bool, count *counter, sent *atomic.Int64) batch {
	idx := make([]int32, 0, len(items))
	for i := range items {
		it := &items[i]
		if removes(*it) || (announce && !announces(*it)) {
			continue
		}
		r.madeWrites(1)
		if skip(it.PolicyName) {
			r.madeWrites(-1)
			count.add(1)
			continue
		}
		idx = append(idx, int32(i))
	}
	sent.Add(int64(len(idx)))
	return batch{items: &itemWrites{p: p, items: items, idx: idx, announce: announce}}
}
