package syncer_test

import (
	"testing"
	"time"

	"github.com/knue/syncjob/internal/mirror"
)

// TestMirror_BudgetCutUpdate_ObjectMissing_NotRecordedConverged: a full
// run finds 가's object missing from the mirror while the plan also
// updates 가 (so the plan's upload, not a repair, is to restore it), and
// the daily write budget cuts that update. The mirror is not recorded
// converged: it lacks 가's object. (A reviewer found e0c0a19, since
// reverted, recording it converged: the titles step had uploaded nothing.)
func TestMirror_BudgetCutUpdate_ObjectMissing_NotRecordedConverged(t *testing.T) {
	t.Parallel()
	r, m := syncedMirroredRig(t)
	r.billed()
	r.repo.Write("a/가.md", "# 가\n\n둘째 판\n")
	r.repo.Remove("b/다.md")
	r.repo.Commit("edit 가, delete 다")
	m.DeleteRaw(t, mirror.Key(prefix, "가"))
	r.clock.Advance(24 * time.Hour)
	opt := withBudget(8)
	opt.Full = true
	opt.AllowDeletes = 1
	res, err := r.run(opt)
	_, _, ok := m.ReadRaw(t, mirror.Key(prefix, "가"))
	t.Logf("budgeted full run: err %v; status %s, waiting %d, mirror %+v; 가's object present: %v", err, res.Summary.Status, res.Summary.Waiting, res.Summary.Mirror, ok)
	if res.Summary.Mirror.Converged != "" && !ok {
		t.Errorf("the mirror is recorded converged (%s), but it has no object for 가, which the registry publishes at %s", res.Summary.Mirror.Converged, r.policies()["가"].SHA)
	}
}
