package cloudflare

import (
	"slices"
	"testing"
)

// TestChunkStreamed_OneBodyKeepsTheCallersLists: a streamed put that fits
// one body sends it from the caller's lists of keys, indexes and lengths,
// not copies of them (10,000 a batch: some 0.3 MB); one over a limit is
// split as chunk splits, every element once, in order.
func TestChunkStreamed_OneBodyKeepsTheCallersLists(t *testing.T) {
	t.Parallel()
	keys, idx, lens := []string{"a", "b", "c"}, []int{0, 2, 5}, []int{10, 20, 30}
	encode := func(dst []byte, _ int) []byte { return dst }
	bodies := chunkStreamed(keys, idx, lens, encode, 1000)
	if len(bodies) != 1 || &bodies[0].keys[0] != &keys[0] || &bodies[0].idx[0] != &idx[0] || &bodies[0].lens[0] != &lens[0] {
		t.Fatalf("one body: %d bodies, or copies of the lists", len(bodies))
	}
	if got := bodies[0].size(); got != 2+10+1+20+1+30 {
		t.Errorf("size %d, want 64", got)
	}
	bodies = chunkStreamed(keys, idx, lens, encode, 40) // [a,b] is 33 bytes, [a,b,c] 64
	var got [][]string
	for _, b := range bodies {
		got = append(got, b.keys)
		if b.size() > 40 {
			t.Errorf("body %v of %d bytes passes the limit of 40", b.keys, b.size())
		}
	}
	if len(got) != 2 || !slices.Equal(got[0], []string{"a", "b"}) || !slices.Equal(got[1], []string{"c"}) || bodies[1].idx[0] != 5 || bodies[1].lens[0] != 30 {
		t.Errorf("split %v, want [a b] [c] with c's index and length", got)
	}
}
