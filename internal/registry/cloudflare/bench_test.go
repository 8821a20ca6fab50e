package cloudflare_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/registrytest"
)

// batchSize is the syncer's default batch: at most 50 pairs per request.
const batchSize = 50

// cost is the Cloudflare requests of one sync: reading state (Policies)
// and writing (puts, deletes, run metadata).
type cost struct {
	read, write int64
	puts, dels  int // pairs put and keys deleted
}

// syncCosts is the cost of a first sync of n policies into a namespace
// holding `legacy` v1 entries, then of an incremental sync of 5 changes.
type syncCosts struct{ first, incremental cost }

func sha(i, version int) string { return fmt.Sprintf("%038x%02x", i, version) }

func entryOf(i, version int, now string) policy.Entry {
	name := fmt.Sprintf("규정 %05d (개정)\u20242024", i)
	return policy.Entry{PolicyName: name, Title: "한국교원대학교 " + name, Status: policy.StatusActive, LastUpdated: now, SHA: sha(i, version), Path: "규정/" + name + ".md"}
}

// simulate mimics what the syncer does against Cloudflare: Policies(), the
// puts (policy and queue pairs) in batches of 50 run concurrently, then the
// deletes, then RecordRun.
func simulate(tb testing.TB, n, legacy int) syncCosts {
	tb.Helper()
	w := mustWorld(tb, nil, nil)
	for i := range legacy {
		w.fake.Set(fmt.Sprintf("policy:옛 규정 %d", i), []byte(fmt.Sprintf(`{"title":"옛 규정 %d","fileNo":"%d","status":"active"}`, i, i)), nil, 0)
	}
	reg := registry.New(w.store)
	ctx := context.Background()
	now := registrytest.Epoch.Format(time.RFC3339)

	run := func(changes func(known map[string]policy.Entry) (puts []registry.Pair, dels []string), runID string) cost {
		before := w.store.Usage().Requests
		known, problems, err := reg.Policies(ctx)
		if err != nil || problems != nil {
			tb.Fatalf("Policies: %v %v", err, problems)
		}
		read := w.store.Usage().Requests - before
		puts, dels := changes(known)
		var g errgroup.Group
		g.SetLimit(4)
		for batch := range slices.Chunk(puts, batchSize) {
			g.Go(func() error {
				if out := w.store.Put(ctx, batch); out != nil {
					return fmt.Errorf("put: %v", out)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			tb.Fatal(err)
		}
		for batch := range slices.Chunk(dels, batchSize) {
			g.Go(func() error {
				if out := w.store.Delete(ctx, batch); out != nil {
					return fmt.Errorf("delete: %v", out)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			tb.Fatal(err)
		}
		sum := policy.RunSummary{RunID: runID, Status: policy.RunSuccess, Timestamp: now}
		if err := reg.RecordRun(ctx, sum, w.clock.Now(), "head-"+runID); err != nil {
			tb.Fatalf("RecordRun: %v", err)
		}
		return cost{read: read, write: w.store.Usage().Requests - before - read, puts: len(puts), dels: len(dels)}
	}

	var c syncCosts
	c.first = run(func(map[string]policy.Entry) ([]registry.Pair, []string) {
		var puts []registry.Pair
		for i := range n {
			e := entryOf(i, 0, now)
			puts = append(puts, registry.PolicyPair(e), registry.QueuePair(policy.QueueEntry{PolicyName: e.PolicyName, SHA: e.SHA, Operation: policy.OpAdd, CreatedAt: now}))
		}
		return puts, nil
	}, "first")
	w.clock.Advance(24 * time.Hour)
	c.incremental = run(func(known map[string]policy.Entry) ([]registry.Pair, []string) {
		if len(known) != n+legacy {
			tb.Fatalf("registry holds %d policies, want %d", len(known), n+legacy)
		}
		var puts []registry.Pair
		for _, i := range []int{1, 2, 3} { // updates
			e := entryOf(i, 1, now)
			puts = append(puts, registry.PolicyPair(e), registry.QueuePair(policy.QueueEntry{PolicyName: e.PolicyName, SHA: e.SHA, Operation: policy.OpUpdate, CreatedAt: now}))
		}
		add := entryOf(n, 0, now)
		puts = append(puts, registry.PolicyPair(add), registry.QueuePair(policy.QueueEntry{PolicyName: add.PolicyName, SHA: add.SHA, Operation: policy.OpAdd, CreatedAt: now}))
		gone := entryOf(0, 0, now).PolicyName
		return puts, []string{registry.PolicyKey(gone), registry.QueueKey(gone)}
	}, "incremental")
	return c
}

func ceilDiv(a, b int) int64 { return int64((a + b - 1) / b) }

// readBound is the target for reading state: one list request per 1,000
// keys (at least one), plus one Get per legacy key.
func readBound(keys, legacy int) int64 { return max(1, ceilDiv(keys, 1000)) + int64(legacy) }

// writeBound is the target for writing: one request per batch of puts and
// per batch of deletes (puts land before deletes, so they never share a
// batch), plus two for the run metadata (history+lastRun, then lastCommit).
func writeBound(c cost) int64 { return ceilDiv(c.puts, batchSize) + ceilDiv(c.dels, batchSize) + 2 }

func TestCloudflareRequests_WithinTargets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ n, legacy int }{{100, 0}, {1000, 0}, {100, 3}, {1000, 3}} {
		t.Run(fmt.Sprintf("policies=%d/legacy=%d", tc.n, tc.legacy), func(t *testing.T) {
			c := simulate(t, tc.n, tc.legacy)
			if want := readBound(tc.legacy, tc.legacy); c.first.read > want {
				t.Errorf("first sync: read requests = %d, want <= %d", c.first.read, want)
			}
			if want := writeBound(c.first); c.first.write > want {
				t.Errorf("first sync: write requests = %d, want <= %d (%d puts)", c.first.write, want, c.first.puts)
			}
			if want := readBound(tc.n+tc.legacy, tc.legacy); c.incremental.read != want {
				t.Errorf("incremental sync: read requests = %d, want %d", c.incremental.read, want)
			}
			if want := writeBound(c.incremental); c.incremental.write > want || want != 4 {
				t.Errorf("incremental sync: write requests = %d, want <= %d (= 4)", c.incremental.write, want)
			}
		})
	}
}

// BenchmarkCloudflareRequests reports the Cloudflare requests of a first
// sync and of an incremental sync of 5 changes (3 updates, 1 add, 1 delete),
// against the fake:
//
//	go test ./internal/cloudflare -run '^$' -bench CloudflareRequests -benchtime 1x
func BenchmarkCloudflareRequests(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("policies=%d", n), func(b *testing.B) {
			var c syncCosts
			for b.Loop() {
				c = simulate(b, n, 0)
			}
			b.ReportMetric(float64(c.first.read), "first-read-req")
			b.ReportMetric(float64(c.first.write), "first-write-req")
			b.ReportMetric(float64(c.first.read+c.first.write), "first-req")
			b.ReportMetric(float64(c.incremental.read), "incr-read-req")
			b.ReportMetric(float64(c.incremental.write), "incr-write-req")
			b.ReportMetric(float64(c.incremental.read+c.incremental.write), "incr-req")
		})
	}
}
