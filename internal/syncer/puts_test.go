package syncer_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/syncer"
)

// kinds labels each bulk write by what it carries: "A" announcements
// (queue: keys only), "P" entries (policy: keys only), "-" anything else
// (the lease, the record).
func kinds(reqs []bulkReq) string {
	var b strings.Builder
	for _, q := range reqs {
		queue, pol := 0, 0
		for _, k := range q.landed {
			switch {
			case strings.HasPrefix(k, registry.QueuePrefix):
				queue++
			case strings.HasPrefix(k, registry.PolicyPrefix):
				pol++
			}
		}
		switch {
		case queue > 0 && queue == len(q.landed):
			b.WriteString("A")
		case pol > 0 && pol == len(q.landed):
			b.WriteString("P")
		default:
			b.WriteString("-")
		}
	}
	return b.String()
}

// A group's entries go as soon as its own announcements landed, not after
// every announcement of the plan: with one batch in flight, the
// announcements run at most two groups ahead of the entries. Every entry
// still lands after its announcement, and once.
func TestApply_EntriesFollowTheirOwnAnnouncements_NotEveryAnnouncement(t *testing.T) {
	t.Parallel()
	const n = 30
	r := newCFRig(t, n, nil)
	res, err := r.run(context.Background(), syncer.Options{BatchSize: 5, Concurrency: 1})
	if err != nil || res.Summary.Added != n {
		t.Fatalf("run: %v, %d added", err, res.Summary.Added)
	}
	r.bulk.mu.Lock()
	reqs := slices.Clone(r.bulk.reqs)
	r.bulk.mu.Unlock()
	slices.SortFunc(reqs, func(a, b bulkReq) int { return a.start - b.start })
	got := strings.Trim(kinds(reqs), "-")
	if want := "AAPAPAPAPAPP"; got != want {
		t.Errorf("bulk writes %q, want %q (A: 5 announcements, P: their 5 entries)", got, want)
	}
	checkAnnouncedFirst(t, r.bulk.landings())
	checkWrittenOnce(t, r.bulk.landings(), n, 1)
}
