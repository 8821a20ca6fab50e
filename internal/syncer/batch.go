package syncer

import (
	"context"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// batch is the writes of one request: ops made up front (removals, queue
// work, repaired entries), or the announcements or entries of a group of
// the plan's items, each referred to by its index (items).
type batch struct {
	ops   []op
	items *itemWrites
}

// itemWrites are the announcements (queue entries) or the entries of some
// of a group's items, made by this one value: a write in flight holds the
// index of its item (4 bytes), not an op, a registry.Write, a key and two
// closures (some 220 bytes; docs/bench.md, "How we got here", "Memory,
// eighth pass"). Each key and pair is made from its item when the store
// takes the batch (registry.Registry.WriteMade), a key again for a
// failure.
type itemWrites struct {
	p        *planWrites
	items    []policy.Item
	idx      []int32 // the items written, by index in items
	announce bool    // queue entries, else policy entries
}

func (b batch) len() int {
	if b.items != nil {
		return len(b.items.idx)
	}
	return len(b.ops)
}

// name is the policy whose outcome the i-th write decides.
func (b batch) name(i int) string {
	if b.items != nil {
		return b.items.item(i).PolicyName
	}
	return b.ops[i].name
}

// key is the key the i-th write puts or deletes.
func (b batch) key(i int) string {
	if b.items != nil {
		return b.items.key(i)
	}
	return b.ops[i].key
}

// write sends the batch, each failed key with its error.
func (b batch) write(ctx context.Context, reg *registry.Registry) map[string]error {
	if b.items != nil {
		return reg.WriteMade(ctx, len(b.items.idx), b.items.key, b.items.pair)
	}
	return reg.Write(ctx, takeWrites(b.ops)...)
}

func (w *itemWrites) item(i int) *policy.Item { return &w.items[w.idx[i]] }

func (w *itemWrites) key(i int) string {
	if w.announce {
		return registry.QueueKey(w.item(i).PolicyName)
	}
	return registry.PolicyKey(w.item(i).PolicyName)
}

// pair is the i-th write's pair, made from its item as it is now.
func (w *itemWrites) pair(i int) registry.Pair {
	if w.announce {
		return registry.QueuePair(w.p.announcement(*w.item(i)))
	}
	return registry.PolicyPair(w.p.entry(*w.item(i)))
}
