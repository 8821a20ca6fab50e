package syncer_test

import (
	"context"
	"errors"
	"testing"

	"github.com/knue/syncjob/internal/report"
	"github.com/knue/syncjob/internal/syncer"
)

// TestQueue_FailedDeleteThenSameBlobMovedBack_FailureRecordCleared: a
// delete of 다 fails (queue:다 records it); the next commit brings the
// same blob back as c/다.md, a move. The move lands, and the failed
// delete's record is rewritten clean: status counts nothing waiting for
// retry. (An adversarial helper found it kept for good: a move writes no
// queue entry, and the settling left alone every name the plan touched.)
func TestQueue_FailedDeleteThenSameBlobMovedBack_FailureRecordCleared(t *testing.T) {
	t.Parallel()
	r := syncedRig(t) // a/가.md, a/나.md, b/다.md
	r.repo.Remove("b/다.md")
	r.repo.Write("a/나.md", "# 나 개정\n") // another read, so the run is not an outage
	r.repo.Commit("delete 다")
	r.store.FailKeys(map[string]error{"policy:다": errors.New("HTTP 500")})
	if _, err := r.run(syncer.Options{}); !errors.Is(err, syncer.ErrPartial) {
		t.Fatalf("failing run: %v", err)
	}
	r.store.FailKeys(nil)

	r.repo.Write("c/다.md", "# 다\n") // the very blob the registry still holds, in another folder
	r.repo.Commit("다 is back in c/")
	res := r.mustRun()
	if res.Summary.Status != "success" {
		t.Fatalf("status %s", res.Summary.Status)
	}
	if e := r.policies()["다"]; e.Path != "c/다.md" {
		t.Fatalf("registry 다 = %+v", e)
	}
	// Later runs: an incremental one that touches something else, then a
	// full reconcile.
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Commit("unrelated")
	r.mustRun()
	if res, err := r.run(syncer.Options{Full: true}); err != nil || res.Summary.Status != "success" {
		t.Fatalf("full run: %v %s", err, res.Summary.Status)
	}

	q, err := r.reg.Queue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := q["다"]; ok && e.ErrorMessage != nil {
		t.Errorf("after three successful runs (one full) the registry holds 다 at its head version, but queue:다 still records a failed write: operation %q, retryCount %d, errorMessage %q",
			e.Operation, e.RetryCount, *e.ErrorMessage)
	}
	st, err := report.ReadStatus(context.Background(), r.reg, r.clock.Now(), 5, false)
	if err != nil {
		t.Fatal(err)
	}
	if st.WaitingRetry != 0 {
		t.Errorf("status says %d waiting for retry after a successful full run", st.WaitingRetry)
	}
}
