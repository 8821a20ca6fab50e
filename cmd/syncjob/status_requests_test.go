package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// longRepeats makes one failed entry in twenty carry an error message of
// 1.4 KB (200 times "오류 "), longer than the 1,024 bytes of metadata hold:
// it is cut there, and read whole by bulk get.
const longRepeats = 20

// seedRegistry writes n policies, n queue entries (one in ten failed, with a
// long error message), dead letters and a run history of 30 runs straight
// into the world's registry, as many runs would have left it. legacy writes
// the queue and dead-letter keys without metadata, as older versions did.
func seedRegistry(t *testing.T, w *world, n, dead int, legacy bool) {
	t.Helper()
	now := w.clock()
	for _, p := range seedPairs(n, dead, now) { // straight into the fake: what is measured is the program's reads
		if legacy && !strings.HasPrefix(p.Key, registry.PolicyPrefix) {
			p.Metadata = nil
		}
		w.cf.Set(p.Key, p.Value, p.Metadata, p.TTL)
	}
	// The history is recorded as runs record it, into a memory store, and
	// its keys set straight into the fake too: sending it, 60 requests a
	// world, was about a tenth of the test's CPU under -race.
	mem := registry.NewMemory(w.clock)
	reg := registry.New(mem)
	for i := range 30 {
		at := now.Add(time.Duration(i-30) * time.Hour)
		sum := policy.RunSummary{Timestamp: at.Format(policy.TimeLayout), Status: policy.RunSuccess, RunID: fmt.Sprintf("run-%02d", i), Trigger: "schedule", Mode: "incremental", CommitSHA: strings.Repeat("c", 40), Policies: n, Skipped: []policy.Skip{}, Conflicts: []policy.Conflict{}, Pending: []string{}}
		if err := reg.RecordRun(context.Background(), sum, at, sum.CommitSHA); err != nil {
			t.Fatalf("seed run: %v", err)
		}
	}
	items, err := mem.List(context.Background(), "")
	if err != nil {
		t.Fatalf("seed runs: %v", err)
	}
	for _, it := range items {
		var ttl time.Duration
		if !it.Expiration.IsZero() {
			ttl = it.Expiration.Sub(now)
		}
		w.cf.Set(it.Key, it.Value, it.Metadata, ttl)
	}
}

// seeded holds the pairs of seedRegistry, made once for each count and
// time and shared by the worlds that ask for the same (the Cloudflare fake
// stores copies): the subtests of 2,500 policies, legacy or not, each
// encoded 5,000 pairs under -race.
var seeded = struct {
	sync.Mutex
	pairs map[seedKey]func() []registry.Pair
}{pairs: map[seedKey]func() []registry.Pair{}}

type seedKey struct {
	n, dead int
	now     time.Time
}

// seedPairs returns the policy, queue and dead-letter pairs of
// seedRegistry, with their metadata; the caller copies what it changes.
func seedPairs(n, dead int, now time.Time) []registry.Pair {
	k := seedKey{n, dead, now}
	seeded.Lock()
	made, ok := seeded.pairs[k]
	if !ok {
		made = sync.OnceValue(func() []registry.Pair { return makeSeedPairs(n, dead, now) })
		seeded.pairs[k] = made
	}
	seeded.Unlock()
	return made()
}

func makeSeedPairs(n, dead int, now time.Time) []registry.Pair {
	var pairs []registry.Pair
	for i := range n {
		name := fmt.Sprintf("규정 %05d", i)
		sha := fmt.Sprintf("%040x", i+1)
		pairs = append(pairs, registry.PolicyPair(policy.Entry{PolicyName: name, Title: name, Status: policy.StatusActive, LastUpdated: now.Format(policy.TimeLayout), SHA: sha, Path: "규정/" + name + ".md"}))
		q := policy.QueueEntry{PolicyName: name, SHA: sha, Operation: "add", CreatedAt: now.Format(policy.TimeLayout)}
		if i%10 == 0 {
			msg := fmt.Sprintf("cloudflare: bulk write: key %d: %s", i, strings.Repeat("오류 ", longRepeats*(i%20)))
			q.ErrorMessage, q.RetryCount = &msg, 1
		}
		pairs = append(pairs, registry.QueuePair(q))
	}
	for i := range dead {
		msg := "cloudflare: 502"
		d := policy.DeadLetter{QueueEntry: policy.QueueEntry{PolicyName: fmt.Sprintf("규정 %05d", i), SHA: fmt.Sprintf("%040x", i+7), Operation: "update", RetryCount: 3, CreatedAt: now.Format(policy.TimeLayout), ErrorMessage: &msg}, DeadAt: now.Format(policy.TimeLayout), Reason: "3 failed attempts"}
		pairs = append(pairs, registry.DeadLetterPair(d))
	}
	return pairs
}

// countedRun runs the program and returns what it printed and the requests
// the fake Cloudflare saw.
func (w *world) countedRun(args ...string) (result, int) {
	w.t.Helper()
	w.cf.ResetCounts()
	r := w.run(args...)
	return r, w.cf.TotalRequests()
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func TestStatus_ReadsCostFewRequests_AnyRegistrySize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n      int
		legacy bool
	}{{93, false}, {2500, false}, {93, true}, {2500, true}} {
		t.Run(fmt.Sprintf("%d legacy=%v", tc.n, tc.legacy), func(t *testing.T) {
			t.Parallel()
			w := newCloudflareWorld(t)
			seedRegistry(t, w, tc.n, 2, tc.legacy)

			r, n := w.countedRun("status", "--check")
			t.Logf("status --check: %d requests\n%s", n, r.stdout)
			if r.code != exitFailed || !strings.Contains(r.stdout, "unhealthy: 2 dead letters hold back versions: 규정 00000, 규정 00001") {
				t.Errorf("status --check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if n > 5 {
				t.Errorf("status --check made %d requests at %d policies, want at most 5", n, tc.n)
			}

			r, n = w.countedRun("queue", "list", "--json")
			// The failed entries whose error message was cut to fit the
			// metadata, or all of them when written without it, are read
			// by bulk gets.
			if want := ceilDiv(tc.n, 1000) + ceilDiv(tc.n, 100); n > want {
				t.Errorf("queue list made %d requests for %d entries, want at most %d", n, tc.n, want)
			}
			if r.code != 0 || strings.Count(r.stdout, `"policyName"`) != tc.n {
				t.Fatalf("queue list: exit %d, %d entries\n%s", r.code, strings.Count(r.stdout, `"policyName"`), r.stderr)
			}
			// The entries read back whole, the longest error messages too.
			long := fmt.Sprintf("key %d: %s", 90, strings.Repeat("오류 ", longRepeats*(90%20)))
			if !strings.Contains(r.stdout, long) {
				t.Errorf("queue list lost the long error message of 규정 00090")
			}
			t.Logf("queue list: %d requests", n)

			r, n = w.countedRun("status")
			t.Logf("status: %d requests\n%s", n, r.stdout)
			// one bulk get of the state, a listing each of the dead
			// letters, the queue, the policies and the history, one bulk
			// get of the recent runs (+ the bulk gets of cut or old
			// queue and dead-letter entries)
			want := 1 + 1 + ceilDiv(tc.n, 1000) + ceilDiv(tc.n, 1000) + 1 + 1
			if tc.legacy {
				want += ceilDiv(tc.n, 100) + 1
			} else {
				want += ceilDiv(tc.n/10, 100)
			}
			if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("%d policies", tc.n)) || !strings.Contains(r.stdout, "dead letters   2") {
				t.Errorf("status: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if n > want {
				t.Errorf("status made %d requests at %d policies, want at most %d", n, tc.n, want)
			}
		})
	}
}
