package syncer_test

import (
	"context"
	"errors"
	"testing"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/syncer"
)

// An add announcement left for a policy that no longer exists (its
// delete's policy write landed, its queue removal did not) is removed by
// the next full run; until then every summary counts it, incremental runs
// included. A queue entry whose sha is not its policy's is rewritten for
// the policy's version.
func TestFullRun_RepairsOrphanAndStaleQueueEntries(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	ctx := context.Background()
	orphan := policy.QueueEntry{PolicyName: "유령", SHA: "1111111111111111111111111111111111111111", Operation: policy.OpAdd, CreatedAt: "2026-11-25T16:00:00Z"}
	stale := policy.QueueEntry{PolicyName: "가", SHA: "2222222222222222222222222222222222222222", Operation: policy.OpAdd, CreatedAt: "2026-11-25T16:00:00Z"}
	if errs := r.reg.Write(ctx, registry.PutQueue(orphan), registry.PutQueue(stale)); len(errs) > 0 {
		t.Fatal(errs)
	}

	r.store.FailKeys(map[string]error{registry.QueueKey(orphan.PolicyName): errors.New("refused")})
	_, err := r.run(syncer.Options{Full: true})
	if !errors.Is(err, syncer.ErrPartial) {
		t.Fatalf("full run with the orphan's removal refused: %v, want partial", err)
	}
	if n := r.lastRun().QueueOrphans; n != 1 {
		t.Fatalf("queueOrphans = %d after a refused removal, want 1", n)
	}
	r.store.FailKeys(nil)
	r.repo.Write("b/라.md", "# 라\n")
	r.repo.Commit("add 라")
	if _, err := r.run(syncer.Options{}); err != nil {
		t.Fatalf("incremental run: %v", err)
	}
	if sum := r.lastRun(); sum.Mode != "incremental" || sum.QueueOrphans != 1 {
		t.Fatalf("incremental run: mode %s, queueOrphans %d; want the count carried (1)", sum.Mode, sum.QueueOrphans)
	}

	if _, err := r.run(syncer.Options{Full: true}); err != nil {
		t.Fatalf("full run: %v", err)
	}
	if n := r.lastRun().QueueOrphans; n != 0 {
		t.Errorf("queueOrphans = %d after the repair, want 0", n)
	}
	if _, err := r.reg.QueueEntry(ctx, orphan.PolicyName); !errors.Is(err, policy.ErrNotFound) {
		t.Errorf("orphan queue entry after a full run: %v, want not found", err)
	}
	q, err := r.reg.QueueEntry(ctx, stale.PolicyName)
	if want := r.policies()["가"].SHA; err != nil || q.SHA != want {
		t.Errorf("stale queue entry after a full run: sha %s (%v), want the policy's %s", q.SHA, err, want)
	}
}

// An add announcement lands, the run is killed before its policy: value;
// the file is then emptied (a skip). No policy exists for the name, so the
// full run removes the announcement like any orphan: left alone, a worker
// would retry a policy that never comes.
func TestOrphans_FullRun_AnnouncementOfASkippedName_Removed(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	ctx := context.Background()
	r.repo.Write("c/새.md", "")
	r.repo.Commit("a new file, emptied before its first sync")
	orphan := policy.QueueEntry{PolicyName: "새", SHA: "1111111111111111111111111111111111111111", Operation: policy.OpAdd, CreatedAt: "2026-11-25T16:00:00Z"}
	if errs := r.reg.Write(ctx, registry.PutQueue(orphan)); len(errs) > 0 {
		t.Fatal(errs)
	}
	if _, err := r.run(syncer.Options{Full: true}); err != nil && !errors.Is(err, syncer.ErrPartial) {
		t.Fatalf("full run: %v", err)
	}
	if _, ok := r.policies()["새"]; ok {
		t.Fatal("setup: an empty file was published")
	}
	if _, err := r.reg.QueueEntry(ctx, orphan.PolicyName); !errors.Is(err, policy.ErrNotFound) {
		t.Errorf("queue:새 announces a policy that does not exist (the file is skipped as empty) after a full run: %v; queueOrphans %d",
			err, r.lastRun().QueueOrphans)
	}
}
