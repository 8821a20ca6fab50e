package syncer_test

import (
	"context"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/report"
	"github.com/knue/syncjob/internal/syncer"
)

// TestDeadLetter_EditReverted_DeadLetterGoes_HealthCheckHealthy: an edit
// of 다 fails three times (a dead letter for that version); the author
// reverts it, so the head wants the version the registry holds. The
// dead letter holds nothing back: the run that plans 다 again removes it,
// and status --check is healthy. (An adversarial helper found it kept for
// good: the plan wrote nothing for 다, and only a name the plan writes
// superseded its dead letter; the check exited 1 for ever.)
func TestDeadLetter_EditReverted_DeadLetterGoes_HealthCheckHealthy(t *testing.T) {
	t.Parallel()
	r := syncedRig(t) // a/가.md, a/나.md, b/다.md
	r.repo.Write("b/다.md", "# 다 개정\n")
	r.repo.Write("a/나.md", "# 나 개정\n")
	r.repo.Commit("edit 다")
	failUntilDeadLetter(t, r, "다")

	r.repo.Write("b/다.md", "# 다\n") // the edit reverted: the registry's version again
	r.repo.Commit("revert 다")
	r.mustRun()
	res, err := r.run(syncer.Options{Full: true, Trigger: "schedule"})
	if err != nil || res.Summary.Status != "success" || len(res.Summary.HeldBack) != 0 {
		t.Fatalf("full run: %v, status %s, held back %v", err, res.Summary.Status, res.Summary.HeldBack)
	}
	if e := r.policies()["다"]; e.SHA != r.repo.BlobSHA(r.repo.Head("main"), "b/다.md") {
		t.Fatalf("registry 다 = %+v, not the head's", e)
	}

	st, err := report.ReadStatus(context.Background(), r.reg, r.clock.Now(), 5, true)
	if err != nil {
		t.Fatal(err)
	}
	h := report.CheckHealth(st, r.clock.Now(), 48*time.Hour)
	if !h.Healthy {
		t.Errorf("registry equals the head and the last (full) run succeeded holding nothing back, but status --check says: %s", h.Summary)
	}
	if dl, ok := r.deadLetters()["다"]; ok {
		t.Errorf("dead letter for a version the head no longer wants is kept for good: %+v", dl.QueueEntry)
	}
}

// TestDeadLetter_DeleteGivenUp_FileBack_DeadLetterGoes: the delete of 다
// fails three times (a dead letter holding the delete back); the file
// comes back as it was, so the head wants the entry the registry still
// holds. The dead letter goes, and a later real delete of 다 is not held
// back by it.
func TestDeadLetter_DeleteGivenUp_FileBack_DeadLetterGoes(t *testing.T) {
	t.Parallel()
	r := syncedRig(t) // a/가.md, a/나.md, b/다.md
	r.repo.Remove("b/다.md")
	r.repo.Write("a/나.md", "# 나 개정\n") // another write, so the run is not an outage
	r.repo.Commit("delete 다")
	failUntilDeadLetter(t, r, "다")
	if dl := r.deadLetters()["다"]; dl.Operation != "delete" {
		t.Fatalf("setup: dead letter of 다 = %+v; want a delete given up", dl.QueueEntry)
	}
	r.repo.Write("b/다.md", "# 다\n") // back as it was
	r.repo.Commit("다 back")
	if res := r.mustRun(); res.Summary.Status != "success" || len(res.Summary.HeldBack) != 0 {
		t.Fatalf("run with 다 back: status %s, held back %v", res.Summary.Status, res.Summary.HeldBack)
	}
	if dl, ok := r.deadLetters()["다"]; ok {
		t.Fatalf("the dead letter of a delete the head no longer wants is kept: %+v", dl.QueueEntry)
	}
	r.repo.Remove("b/다.md")
	r.repo.Commit("delete 다 again")
	if res := r.mustRun(); res.Summary.Status != "success" || len(res.Summary.HeldBack) != 0 {
		t.Fatalf("the delete again: status %s, held back %v", res.Summary.Status, res.Summary.HeldBack)
	}
	if _, ok := r.policies()["다"]; ok {
		t.Error("다 is still in the registry after its delete")
	}
}
