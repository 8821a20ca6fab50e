package cloudflare

import (
	"slices"
	"strconv"
	"testing"

	"github.com/knue/syncjob/internal/registry"
)

// TestChunk_SplitsAtTheLimits splits bodies at a byte limit exactly (a
// body is [e,e,…]: n elements take n-1 commas and two brackets) and at
// Cloudflare's 10,000 pairs; the store's byte limit is Cloudflare's 100 MB
// unless a test lowers it.
func TestChunk_SplitsAtTheLimits(t *testing.T) {
	t.Parallel()
	if MaxBulkBytes != 100_000_000 || MaxBulkPairs != 10000 {
		t.Fatalf("limits %d bytes, %d pairs: Cloudflare's are 100,000,000 and 10,000", MaxBulkBytes, MaxBulkPairs)
	}
	if got := (Config{}).withDefaults().MaxBulkBytes; got != MaxBulkBytes {
		t.Errorf("default byte limit %d, want Cloudflare's %d", got, MaxBulkBytes)
	}
	const limit = 1001 // odd: two elements of (limit-3)/2 bytes fill it exactly
	sizes := func(n, each, maxBytes int) []int {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = "k" + strconv.Itoa(i)
		}
		e := make([]byte, each)
		var got []int
		for _, b := range chunk(keys, func(int) []byte { return e }, nil, maxBytes) {
			if len(b.body) > maxBytes && len(b.keys) > 1 {
				t.Errorf("a body of %d bytes and %d pairs passes the %d-byte limit", len(b.body), len(b.keys), maxBytes)
			}
			got = append(got, len(b.keys))
		}
		return got
	}
	for _, c := range []struct {
		name           string
		n, each, limit int
		want           []int
	}{
		{"six of a fifth of the limit: four fit", 6, limit / 5, limit, []int{4, 2}},
		{"exactly the limit in one body", 2, (limit - 3) / 2, limit, []int{2}},
		{"one byte over splits", 2, (limit-3)/2 + 1, limit, []int{1, 1}},
		{"one pair over the limit goes alone", 1, limit + 1, limit, []int{1}},
		{"10,001 small pairs: a second body", MaxBulkPairs + 1, 1, MaxBulkBytes, []int{MaxBulkPairs, 1}},
	} {
		if got := sizes(c.n, c.each, c.limit); !slices.Equal(got, c.want) {
			t.Errorf("%s: bodies %v, want %v", c.name, got, c.want)
		}
	}
}

// TestEncodeLettingGo_EachPairLetGoOnceEncoded: a bulk write's pairs are
// let go one by one as their elements go into the body, so that the values
// and the body of a batch of 10,000 are not held at once.
func TestEncodeLettingGo_EachPairLetGoOnceEncoded(t *testing.T) {
	t.Parallel()
	pairs := []registry.Pair{{Key: "a", Value: []byte(`{"x":1}`)}, {Key: "b", Value: []byte("\xff")}}
	encode := encodeLettingGo(pairs)
	if got := string(encode(0)); got != `{"key":"a","value":"{\"x\":1}"}` {
		t.Errorf("element 0 = %s", got)
	}
	if pairs[0].Value != nil || pairs[0].Key != "" || pairs[1].Value == nil {
		t.Errorf("after encoding the first: pairs %q, want the first let go, the second kept", pairs)
	}
	if got := string(encode(1)); got != `{"key":"b","value":"/w==","base64":true}` {
		t.Errorf("element 1 = %s", got)
	}
	if pairs[1].Value != nil {
		t.Error("the second pair is held after it was encoded")
	}
}

// TestPairBound_AtLeastTheElement: the room a body makes for a pair
// (pairLen) is at least its element, for values that JSON escapes most (control
// characters, quotes, backslashes, U+2028, invalid UTF-8 in base64), Hangul,
// metadata and a TTL.
func TestPairBound_AtLeastTheElement(t *testing.T) {
	t.Parallel()
	values := []string{"", "plain", "\x00\x01\x1f\n\t", `""\\"`, "\u2028\u2029", "정책 제목", "\xff\xfe", "a\xffb", "<&>"}
	for _, v := range values {
		for _, p := range []registry.Pair{
			{Key: "policy:" + v, Value: []byte(v)},
			{Key: "lease", Value: []byte(v), Metadata: registry.MustJSON(map[string]string{"sha": v}), TTL: 1 << 62},
		} {
			if e, b := encodePair(p), pairLen(p); b < len(e) {
				t.Errorf("pair %q: bound %d < element %d: %s", p.Value, b, len(e), e)
			}
		}
	}
}

// TestChunk_BodyMadeAtItsSize: a bulk write's body is made once at its
// size, from the pairs' bounds, not grown element by element (growing a
// body of 10,000 entries held up to twice its bytes, docs/bench.md).
func TestChunk_BodyMadeAtItsSize(t *testing.T) {
	t.Parallel()
	const n = 3000
	pairs := make([]registry.Pair, n)
	keys := make([]string, n)
	for i := range pairs {
		keys[i] = "policy:p" + strconv.Itoa(i)
		pairs[i] = registry.Pair{Key: keys[i], Value: []byte(`{"policyName":"p` + strconv.Itoa(i) + `","title":"제목 \"quoted\"","sha":"0123456789abcdef0123456789abcdef01234567"}`),
			Metadata: []byte(`{"sha":"0123456789abcdef0123456789abcdef01234567"}`)}
	}
	bound := func(i int) int { return pairLen(pairs[i]) }
	want := 1
	for i := range pairs {
		want += bound(i) + 1
	}
	bodies := chunk(keys, encodeLettingGo(slices.Clone(pairs)), bound, MaxBulkBytes)
	if len(bodies) != 1 || len(bodies[0].keys) != n {
		t.Fatalf("%d bodies, want one of %d elements", len(bodies), n)
	}
	b := bodies[0]
	if cap(b.body) < want || cap(b.body) > want+want/64 {
		t.Errorf("body of %d bytes has room for %d: not made once at the bound of its %d elements (%d)", len(b.body), cap(b.body), n, want)
	}
	if len(b.body) < want*3/4 {
		t.Errorf("body of %d bytes for a bound of %d: the bound is loose", len(b.body), want)
	}
	if cap(b.keys) != n || cap(b.starts) != n {
		t.Errorf("keys and starts have room for %d and %d, want %d", cap(b.keys), cap(b.starts), n)
	}
}
