package main

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// A sync that starts while an operator retries or drops a dead letter —
// its read of the lease came before the operator's lease, it read lastRun
// before the operator rewrote it, and its record lands after — must not
// leave the operator with a success report that the sync's record undid:
// either the command fails naming the sync, or the next sync does what the
// command said.
func TestDeadLetter_SyncStartsDuringTheChange_NoFalseSuccess(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"deadletter", "drop", "학칙", "--yes"}, {"deadletter", "retry", "학칙"}} {
		t.Run(args[1], func(t *testing.T) {
			t.Parallel()
			w := newCloudflareWorld(t)
			deadLetterWorld(t, w)
			reg := w.open()
			var (
				once  sync.Once
				read  = make(chan struct{})
				taken registry.Lease     // the sync's lease
				seen  *policy.RunSummary // lastRun as the sync read it
			)
			w.watchCloudflare(func(r *http.Request) {
				if !strings.HasSuffix(r.URL.Path, "/bulk/delete") {
					return
				}
				once.Do(func() { // the operator's first delete: the sync starts
					defer close(read)
					var err error
					if seen, err = reg.LastRun(t.Context()); err != nil || seen == nil {
						t.Errorf("the sync's read of lastRun: %v, %v", seen, err)
					}
					if taken, err = reg.TakeLease(t.Context(), nil, "lambda req-sync", w.clock(), 10*time.Hour); err != nil {
						t.Errorf("the sync's lease: %v", err)
					}
				})
			})
			res := w.run(args...)
			<-read
			if seen == nil {
				t.Fatal("the sync never started")
			}
			// The sync records a run on what it read, and releases its lease.
			rec := *seen
			rec.RunID = "sync-during-the-change"
			if err := reg.RecordRun(t.Context(), rec, w.clock(), "", registry.LeaseRelease(taken, w.clock())); err != nil {
				t.Fatalf("the sync's record: %v", err)
			}
			if res.code != exitOK {
				if !strings.Contains(res.stderr, "lambda req-sync") {
					t.Errorf("%v failed without naming the sync: exit %d %q", args, res.code, res.stderr)
				}
				return
			}
			w.run("sync")
			if got := w.state().policies["학칙"]; got.Title != "한국교원대학교 학칙 (개정)" {
				t.Errorf("%v said %q (exit 0), but the next sync left 학칙 at %+v", args, strings.TrimSpace(res.stdout), got)
			}
		})
	}
}
