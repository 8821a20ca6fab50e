package main

import (
	"fmt"
	"os"
	"testing"
)

// BenchmarkSync_Requests measures what a run costs in API requests, as the
// program's own summary line reports them: a first run of a repository of
// about 100 policies, then an incremental run after a commit that adds,
// edits, renames, moves and deletes one file each.
//
//	go test -run '^$' -bench Requests ./cmd/syncjob
func BenchmarkSync_Requests(b *testing.B) {
	w := newWorld(b)
	for i := range 100 {
		w.repo.Write(fmt.Sprintf("규정/제%d편/규정 %03d.md", i%5, i), fmt.Sprintf("# 규정 %d\n\n본문\n", i))
	}
	base := w.repo.Commit("100 policies")
	w.repo.Write("규정/제9편/신규.md", "# 신규\n")
	w.repo.Write("규정/제0편/규정 000.md", "# 규정 0 개정\n")
	w.repo.Move("규정/제1편/규정 001.md", "규정/제1편/규정 001 개명.md")
	w.repo.Move("규정/제2편/규정 002.md", "규정/제8편/규정 002.md")
	w.repo.Remove("규정/제3편/규정 003.md")
	next := w.repo.Commit("five changes")
	var first, incr result
	for b.Loop() {
		_ = os.Remove(w.db)
		w.repo.Reset(base)
		first = w.sync(0)
		w.repo.Reset(next)
		incr = w.sync(0)
	}
	gh, reg := first.requests(b)
	b.ReportMetric(float64(gh), "first-github-req")
	b.ReportMetric(float64(reg), "first-registry-req")
	gh, reg = incr.requests(b)
	b.ReportMetric(float64(gh), "incr-github-req")
	b.ReportMetric(float64(reg), "incr-registry-req")
}
