package cloudflare

import (
	"strconv"
	"testing"
)

// TestChunk_At100MB splits at Cloudflare's real limits: 100 MB a body and
// 10,000 pairs. The elements share one backing array, so 120 MB of them
// cost nothing to build.
func TestChunk_At100MB(t *testing.T) {
	t.Parallel()
	if MaxBulkBytes != 100_000_000 || MaxBulkPairs != 10000 {
		t.Fatalf("limits %d bytes, %d pairs: Cloudflare's are 100,000,000 and 10,000", MaxBulkBytes, MaxBulkPairs)
	}
	big := make([]byte, MaxBulkBytes+1)
	sizes := func(n, each int) []int {
		elems := make([][]byte, n)
		keys := make([]string, n)
		for i := range elems {
			elems[i], keys[i] = big[:each], "k"+strconv.Itoa(i)
		}
		var got []int
		for _, b := range chunk(keys, elems, MaxBulkBytes) {
			if len(b.keys) != len(b.elems) {
				t.Fatalf("body of %d keys and %d elements", len(b.keys), len(b.elems))
			}
			got = append(got, len(b.keys))
		}
		return got
	}
	for _, c := range []struct {
		name    string
		n, each int
		want    []int
	}{
		{"six of 20 MiB: four fit in 100 MB", 6, 20 << 20, []int{4, 2}},
		// a body is [e,e,…]: n elements take n-1 commas and 2 brackets
		{"exactly 100 MB in one body", 2, (MaxBulkBytes - 3) / 2, []int{2}},
		{"one byte over splits", 2, (MaxBulkBytes-3)/2 + 1, []int{1, 1}},
		{"one pair over the limit goes alone", 1, MaxBulkBytes + 1, []int{1}},
		{"10,001 small pairs: a second body", MaxBulkPairs + 1, 1, []int{MaxBulkPairs, 1}},
	} {
		got := sizes(c.n, c.each)
		if len(got) != len(c.want) {
			t.Errorf("%s: bodies %v, want %v", c.name, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: bodies %v, want %v", c.name, got, c.want)
				break
			}
		}
	}
}
