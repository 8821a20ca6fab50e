package report

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// plainAlphabet is what plainWidth measures itself: printable ASCII, a few
// precomposed Hangul syllables (the first, the last, common ones) and U+2024.
var plainAlphabet = []rune(" !(),-./09:AZaz~\u2024가각교규원정칙학한힣")

// TestWidth_PlainText_MeasuredWithoutTheWidthTable: the names, paths and
// titles of a Korean repository are measured without go-runewidth (whose
// first measure of a character past U+02FF builds a 2 MiB table), and
// anything else still by it.
func TestWidth_PlainText_MeasuredWithoutTheWidthTable(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]int{
		"":                   0,
		"policy.md":          9,
		"교원인사 심의 규정 제00026호": 28,
		"규정/제3편 교원인사/제3장 운영.md": 33,
		"연구소 설치(운영)․규정":         22,
	} {
		n, ok := plainWidth(s)
		if !ok || n != want {
			t.Errorf("plainWidth(%q) = %d, %v; want %d, true", s, n, ok, want)
		}
	}
	for _, s := range []string{
		"\u1112\u1161\u11a8",         // decomposed jamo: a grapheme of three runes
		"e\u0301",                    // a combining accent
		"학\u11a8",                    // a syllable and a final consonant that joins it
		"tab\there",                  // a control character
		"\U0001F468\u200D\U0001F469", // a ZWJ sequence
		"\xff",                       // invalid UTF-8
		"é",                          // Latin-1: left to go-runewidth
	} {
		if n, ok := plainWidth(s); ok {
			t.Errorf("plainWidth(%q) = %d, true; want it left to go-runewidth", s, n)
		}
	}
}

// TestWidth_PlainText_AsGoRunewidthMeasuresIt: for any text plainWidth
// measures, it says what go-runewidth says (graphemes included: each of
// its characters stands alone whatever its neighbours).
func TestWidth_PlainText_AsGoRunewidthMeasuresIt(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(19, 4))
	var b strings.Builder
	for range 2000 {
		b.Reset()
		for range rng.IntN(12) {
			b.WriteRune(plainAlphabet[rng.IntN(len(plainAlphabet))])
		}
		s := b.String()
		n, ok := plainWidth(s)
		if want := cells.StringWidth(s); !ok || n != want {
			t.Fatalf("plainWidth(%q) = %d, %v; go-runewidth says %d", s, n, ok, want)
		}
	}
}
