package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
)

// BenchmarkSync_Requests measures what a run costs in API requests, as the
// program's own summary line reports them: a first run of a repository of
// about 100 policies, then an incremental run after a commit that adds,
// edits, renames, moves and deletes one file each.
//
//	go test -run '^$' -bench Sync_Requests ./cmd/syncjob
func BenchmarkSync_Requests(b *testing.B) {
	w := newWorld(b)
	base, next := benchHistory(w, 100)
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

// BenchmarkSync_CloudflareRequests prints the Cloudflare requests (and
// billable writes) of a first sync and of an incremental sync of 5 changes
// (an add, an edit, a rename, a move, a delete) at 100, 1,000 and 10,000
// policies, through the whole program against the Cloudflare fake, as the
// summary line reports them:
//
//	go test -run '^$' -bench CloudflareRequests -benchtime 1x ./cmd/syncjob
func BenchmarkSync_CloudflareRequests(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("policies=%d", n), func(b *testing.B) {
			w := newCloudflareWorld(b)
			base, next := benchHistory(w, n)
			var first, incr result
			var firstWrites, incrWrites float64
			for b.Loop() {
				w.cf.Close()
				w.cf = cloudflaretest.New(cloudflaretest.Config{AccountID: cfAccountID, NamespaceID: cfNamespaceID, Token: cfToken, Now: w.clock, Seed: cfSeed})
				w.env["CLOUDFLARE_API_URL"] = w.cf.BaseURL()
				w.repo.Reset(base)
				first = w.sync(0)
				w.repo.Reset(next)
				incr = w.sync(0)
			}
			_, reg := first.requests(b)
			b.ReportMetric(float64(reg), "first-cf-req")
			firstWrites = first.summaryLine(b)["billableWrites"].(float64)
			b.ReportMetric(firstWrites, "first-cf-writes")
			_, reg = incr.requests(b)
			b.ReportMetric(float64(reg), "incr-cf-req")
			incrWrites = incr.summaryLine(b)["billableWrites"].(float64)
			b.ReportMetric(incrWrites, "incr-cf-writes")
		})
	}
}

// benchHistory commits n policies in nested folders (base), then one commit
// (next) that adds, edits, renames, moves and deletes one file each.
func benchHistory(w *world, n int) (base, next string) {
	for i := range n {
		w.repo.Write(fmt.Sprintf("규정/제%d편/제%d장/규정 %05d.md", i%10, i%7, i), fmt.Sprintf("# 규정 %d\n\n본문\n", i))
	}
	base = w.repo.Commit("policies")
	w.repo.Write("규정/신규.md", "# 신규\n")
	w.repo.Write("규정/제0편/제0장/규정 00000.md", "# 규정 0 개정\n")
	w.repo.Move("규정/제1편/제1장/규정 00001.md", "규정/제1편/제1장/규정 00001 개명.md")
	w.repo.Move("규정/제2편/제2장/규정 00002.md", "규정/제9편/규정 00002.md")
	w.repo.Remove("규정/제3편/제3장/규정 00003.md")
	next = w.repo.Commit("five changes")
	return base, next
}
