package policy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/policy"
)

// benchDoc is a regulation of about size bytes: front matter when front,
// then the title heading at the top (or, when last, after every article),
// then Korean articles.
func benchDoc(size int, front, last bool) []byte {
	var b strings.Builder
	if front {
		b.WriteString("---\nid: 1024\n개정: 2024-03-01\n---\n\n")
	}
	if !last {
		b.WriteString("# 한국교원대학교 학칙 시행세칙\n\n")
	}
	for art := 1; b.Len() < size; art++ {
		fmt.Fprintf(&b, "## 제%d조(목적)\n\n이 규정은 한국교원대학교 학칙 제%d조에 따라 필요한 사항을 정함을 목적으로 한다.\n\n", art, art)
	}
	if last {
		b.WriteString("# 한국교원대학교 학칙 시행세칙\n")
	}
	return []byte(b.String())
}

// BenchmarkTitle measures policy.Title, which a run calls once per file it
// reads: a typical 7 KiB regulation, and a 1 MiB one whose title is on its
// first lines (what a run reads) or on its last (the worst case: a file
// without a heading is read to its end). Title looks at one line at a time:
// its cost grows with where the title is, not with the size of the file.
//
//	go test -run '^$' -bench Title -benchmem ./internal/policy
func BenchmarkTitle(b *testing.B) {
	for _, c := range []struct {
		name        string
		size        int
		front, last bool
	}{
		{"7KiB", 7 << 10, false, false},
		{"7KiB-frontmatter", 7 << 10, true, false},
		{"1MiB-title-first", 1 << 20, false, false},
		{"1MiB-title-last", 1 << 20, false, true},
	} {
		doc := benchDoc(c.size, c.front, c.last)
		if got := policy.Title(doc, "fallback"); got != "한국교원대학교 학칙 시행세칙" {
			b.Fatalf("%s: title %q", c.name, got)
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				policy.Title(doc, "fallback")
			}
		})
	}
}
