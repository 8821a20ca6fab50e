package differ_test

import (
	"fmt"
	"testing"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/policy"
)

// benchTree is a head tree of n policies in nested Korean folders, and the
// registry a previous run left for it with `changed` of them at another sha.
func benchTree(n, changed int) ([]policy.File, map[string]policy.Entry) {
	files := make([]policy.File, 0, n+n/50)
	known := make(map[string]policy.Entry, n)
	for i := range n {
		path := fmt.Sprintf("규정/제%d편 학사/제%d장 운영/학사 운영규정 제%05d호.md", i%12+1, i%8+1, i)
		sha := fmt.Sprintf("%040x", i)
		files = append(files, policy.File{Path: path, SHA: sha, Size: 7 << 10})
		name := policy.NameOf(path)
		if i < changed {
			sha = fmt.Sprintf("%040x", i+n)
		}
		known[name] = policy.Entry{PolicyName: name, SHA: sha, Path: path}
	}
	// what a real tree also holds: folder READMEs and templates, not policies
	for i := range n / 50 {
		files = append(files, policy.File{Path: fmt.Sprintf("규정/제%d편 학사/README.md", i), SHA: fmt.Sprintf("%040x", 2*n+i), Size: 512})
	}
	return files, known
}

// BenchmarkPlan measures planning from the head tree (differ.FromTree, then
// differ.Plan), as a full run does: against an empty registry (a first
// sync) and against one that differs in 7 policies (a reconcile).
//
//	go test -run '^$' -bench Plan -benchmem ./internal/differ
func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{10000, 50000} {
		for _, c := range []struct {
			name    string
			changed int
			empty   bool
		}{{"first", 0, true}, {"reconcile", 7, false}} {
			files, known := benchTree(n, c.changed)
			if c.empty {
				known = map[string]policy.Entry{}
			}
			b.Run(fmt.Sprintf("files=%d/%s", n, c.name), func(b *testing.B) {
				b.ReportAllocs()
				var plan policy.Plan
				for b.Loop() {
					desired, skipped, conflicts := differ.FromTree(files, differ.Options{})
					plan = differ.Plan(desired, known, nil, skipped, conflicts)
				}
				if want := n - len(known) + c.changed; len(plan.Items) != want {
					b.Fatalf("%d items, want %d", len(plan.Items), want)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/file")
			})
		}
	}
}
