package cloudflare

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/knue/syncjob/internal/registry"
)

// bulkPair is one element of a bulk write body as encoding/json writes it:
// what appendPair must write byte for byte.
type bulkPair struct {
	Key           string          `json:"key"`
	Value         string          `json:"value"`
	Metadata      json.RawMessage `json:"metadata,omitempty"`
	ExpirationTTL int64           `json:"expiration_ttl,omitempty"`
	Base64        bool            `json:"base64,omitempty"`
}

// jsonPair is p's element made by encoding/json (HTML left as it is). A
// value goes as a JSON string when it is UTF-8 and no longer so than
// base64-encoded with its flag.
func jsonPair(p registry.Pair) []byte {
	bp := bulkPair{Key: p.Key, Metadata: p.Metadata}
	if utf8.Valid(p.Value) && len(registry.MustJSON(string(p.Value))) <= 2+base64.StdEncoding.EncodedLen(len(p.Value))+len(`,"base64":true`) {
		bp.Value = string(p.Value)
	} else {
		bp.Value = base64.StdEncoding.EncodeToString(p.Value)
		bp.Base64 = true
	}
	if p.TTL > 0 {
		bp.ExpirationTTL = int64((p.TTL + time.Second - 1) / time.Second)
	}
	return registry.MustJSON(bp)
}

// randomText is a short string of characters JSON escapes in every way:
// quotes, backslashes, control characters, HTML, U+2028/9, multi-byte
// runes, invalid bytes.
func randomText(r *rand.Rand) []byte {
	pieces := []string{"a", "Z", " ", `"`, `\`, "\b", "\f", "\n", "\r", "\t", "\x00", "\x1f", "\x7f", "<", ">", "&", "\u2028", "\u2029", "é", "정책", "😀", "\xff", "\xe2\x80", "\xe2\x80\xa8", "/"}
	var b []byte
	for range r.IntN(12) {
		b = append(b, pieces[r.IntN(len(pieces))]...)
	}
	return b
}

// TestAppendPair_AsEncodingJSONWritesIt: appendPair writes what
// encoding/json writes for the element, and pairLen is its length,
// for keys, values and metadata with every kind of character JSON escapes,
// values that are not UTF-8 (base64), TTLs and metadata with whitespace.
func TestAppendPair_AsEncodingJSONWritesIt(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(19, 7))
	metas := []string{"", `{"sha":"abc","title":"a b\u2028 \"c\""}`, " { \"a\" : [ 1 , \"x y\\\\\" ] }\n", `"\u2029"`, `null`}
	ttls := []time.Duration{0, time.Minute, 90*time.Second + 1, 1<<62 + 7}
	for i := range 3000 {
		p := registry.Pair{Key: string(randomText(r)), Value: randomText(r), Metadata: json.RawMessage(metas[r.IntN(len(metas))]), TTL: ttls[r.IntN(len(ttls))]}
		if meta := randomText(r); i%3 == 0 {
			p.Metadata = registry.MustJSON(map[string]string{"t": string(meta)})
		}
		want := jsonPair(p)
		dst := []byte("[prefix,")
		got := appendPair(dst, p)
		if !bytes.Equal(got[len(dst):], want) || !bytes.HasPrefix(got, []byte("[prefix,")) {
			t.Fatalf("appendPair(%q) = %s, want %s", p, got[len(dst):], want)
		}
		if n := pairLen(p); n != len(want) {
			t.Fatalf("pairLen(%q) = %d, want %d (%s)", p, n, len(want), want)
		}
		if e := encodePair(p); !bytes.Equal(e, want) {
			t.Fatalf("encodePair(%q) = %s, want %s", p, e, want)
		}
	}
}

// BenchmarkAppendPair: an element appended into room enough for it
// allocates nothing (encoding/json made a struct, a copy of the value and
// a growing buffer: BenchmarkAppendPair/encoding-json); measuring it
// neither.
func BenchmarkAppendPair(b *testing.B) {
	p := registry.Pair{Key: "policy:정책 1", Value: []byte(`{"policyName":"정책 1","title":"a \"b\"\n","sha":"0123456789abcdef0123456789abcdef01234567","path":"policies/정책 1.md"}`), Metadata: json.RawMessage(`{"sha":"0123456789abcdef0123456789abcdef01234567"}`), TTL: time.Hour}
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		room := make([]byte, 0, 1024)
		for b.Loop() {
			room = appendPair(room[:0], p)
		}
	})
	b.Run("len", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = pairLen(p)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = jsonPair(p)
		}
	})
}
