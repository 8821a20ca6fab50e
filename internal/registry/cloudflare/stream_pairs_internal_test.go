package cloudflare

import (
	"strconv"
	"testing"
)

// TestChunkStreamed_SplitsAtTenThousandPairs: a streamed put of more than
// MaxBulkPairs elements is split at MaxBulkPairs, every element once, in
// order, each body's size its exact length.
func TestChunkStreamed_SplitsAtTenThousandPairs(t *testing.T) {
	t.Parallel()
	n := MaxBulkPairs + 1
	keys, idx, lens := make([]string, n), make([]int, n), make([]int, n)
	for i := range keys {
		keys[i], idx[i], lens[i] = strconv.Itoa(i), i, 3
	}
	bodies := chunkStreamed(keys, idx, lens, func(dst []byte, _ int) []byte { return append(dst, "abc"...) }, MaxBulkBytes)
	if len(bodies) != 2 || len(bodies[0].keys) != MaxBulkPairs || len(bodies[1].keys) != 1 || bodies[1].idx[0] != MaxBulkPairs {
		t.Fatalf("split into %d bodies, want %d elements then the last one", len(bodies), MaxBulkPairs)
	}
	for _, b := range bodies {
		r := b.reader()
		got := 0
		buf := make([]byte, 4096)
		for {
			k, err := r.Read(buf)
			got += k
			if err != nil {
				break
			}
		}
		if int64(got) != b.size() {
			t.Errorf("body of %d elements read %d bytes, sized %d", len(b.keys), got, b.size())
		}
	}
}
