package githubtest

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestObjectIDs_AsTheRegexpFindsThem(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "0123456789abcdefABz \n\x00:^{}."
	for n := range 300 {
		var b strings.Builder
		for range rng.IntN(300) {
			if rng.IntN(4) == 0 { // long hex runs, some of 40, 80 and more
				run := strings.Repeat("0123456789abcdef", 6)
				b.WriteString(run[:rng.IntN(len(run))])
			}
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		s := b.String()
		var got []string
		for _, id := range objectIDs([]byte(s)) {
			got = append(got, string(id))
		}
		if want := objectID.FindAllString(s, -1); !slices.Equal(got, want) {
			t.Fatalf("case %d: %q\n got %q\nwant %q", n, s, got, want)
		}
	}
}
