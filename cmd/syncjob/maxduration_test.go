package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// MAX_DURATION gives a CLI run a deadline as Lambda's: a first sync larger
// than it stops writing shortly before, records itself partial (exit 3)
// naming what waits, keeps lastCommit, and the next run continues from the
// registry as it is: every policy: key is written once over both runs.
func TestSync_MaxDuration_PartialThenNextRunContinues_EachPolicyWrittenOnce(t *testing.T) {
	t.Parallel()
	const n = 10 // no more than the archive threshold: read as blobs, at once
	w := newCloudflareWorld(t)
	for i := range n {
		w.repo.Write(fmt.Sprintf("규정/%02d/정책 %02d.md", i%4, i), fmt.Sprintf("# 정책 %d\n", i))
	}
	w.repo.Commit("policies")
	// Each write of a policy or an announcement takes 200 ms: the 20 of them
	// outlast the deadline, which leaves the reads (ten blobs at once, a few
	// hundred ms under -race, over a second at a load average of 12: an
	// 800 ms deadline failed the run there) time to finish first.
	var slow atomic.Bool
	slow.Store(true)
	w.watchCloudflare(func(r *http.Request) {
		if slow.Load() && isBulkWrite(r) && !bodyMentions(r, registry.LeaseKey) {
			time.Sleep(200 * time.Millisecond)
		}
	})
	w.env["BATCH_SIZE"], w.env["CONCURRENCY"] = "1", "1"

	first := w.sync(exitPartial, "--max-duration", "2500ms")
	var sum policy.RunSummary
	v, _, ok := w.cf.Value(registry.LastRunKey)
	if !ok || json.Unmarshal(v, &sum) != nil {
		t.Fatalf("lastRun not recorded (%q)", v)
	}
	if sum.Status != policy.RunPartial || !sum.StoppedEarly || sum.Waiting == 0 || sum.Added+sum.Waiting != n || len(sum.Failures) != 0 {
		t.Errorf("recorded %s, stopped early %v, %d added, %d waiting, %d failed: want partial, stopped early, %d added or waiting, none failed\n%s",
			sum.Status, sum.StoppedEarly, sum.Added, sum.Waiting, len(sum.Failures), n, first.stderr)
	}
	t.Logf("the first run: %d added, %d waiting", sum.Added, sum.Waiting)
	if _, _, ok := w.cf.Value(registry.LastCommitKey); ok {
		t.Error("lastCommit advanced past policies that wait")
	}

	slow.Store(false)
	delete(w.env, "BATCH_SIZE")
	w.sync(0)
	writes := w.cf.KeyWrites(registry.PolicyPrefix)
	if len(writes) != n {
		t.Errorf("%d policies in the registry, want %d", len(writes), n)
	}
	for key, k := range writes {
		if k != 1 {
			t.Errorf("%s written %d times over both runs, want once", key, k)
		}
	}
	if _, _, ok := w.cf.Value(registry.LastCommitKey); !ok {
		t.Error("lastCommit not set after the run that converged")
	}
}

// A bad MAX_DURATION is a configuration error naming the setting and the
// form it takes (exit 2).
func TestSync_MaxDuration_Bad_Exit2NamingTheSetting(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for _, bad := range [][]string{{"--max-duration", "10"}, {"--max-duration", "-1m"}} {
		r := w.sync(exitUsage, bad...)
		if !strings.Contains(r.stderr, "max-duration") && !strings.Contains(r.stderr, "MAX_DURATION") || !strings.Contains(r.stderr, "duration") {
			t.Errorf("%v: stderr %q, want the setting named and a duration asked for", bad, r.stderr)
		}
	}
	w.env["MAX_DURATION"] = "soon"
	if r := w.sync(exitUsage); !strings.Contains(r.stderr, "MAX_DURATION") || !strings.Contains(r.stderr, "such as") {
		t.Errorf("MAX_DURATION=soon: stderr %q, want the setting named and its form", r.stderr)
	}
}

// A run MAX_DURATION stops before it could plan (GitHub does not answer)
// fails naming MAX_DURATION and its value, in the CLI and in Lambda: it
// said only "context deadline exceeded" (an adversarial helper).
func TestSync_MaxDurationStopsTheRun_ErrorNamesIt(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.env["MAX_DURATION"] = "500ms"
	w.gh.FailNext(githubtest.AnyKind, -1, githubtest.Hang())
	if r := w.run("sync"); r.code != exitFailed || !strings.Contains(r.stdout, "MAX_DURATION (500ms) passed") {
		t.Errorf("CLI: exit %d: %s, want 1 naming MAX_DURATION (500ms)", r.code, firstLine(r.stdout))
	}
	if inv := w.invoke(`{"trigger":"schedule"}`, time.Minute); inv.err == nil || !strings.Contains(inv.err.Error(), "MAX_DURATION (500ms) passed") {
		t.Errorf("Lambda: %v, want it naming MAX_DURATION (500ms)", inv.err)
	}
}
