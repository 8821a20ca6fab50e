package syncer_test

import (
	"context"
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/syncer"
)

// TestMirror_RepairOfAVersionOverTheLimit_NotASuccess: the registry
// publishes 가 at a version over MAX_FILE_SIZE (the limit lowered since),
// and its object is gone from the mirror. A full run cannot read it to
// repair the object, so it does not record success: it names 가's failure.
// (An adversarial helper found such runs recording success, the mirror
// without the object, for good.)
func TestMirror_RepairOfAVersionOverTheLimit_NotASuccess(t *testing.T) {
	t.Parallel()
	r, m := syncedMirroredRig(t)
	big := "# 가\n\n" + strings.Repeat("가", 700) + "\n"
	r.repo.Write("a/가.md", big)
	r.repo.Commit("big 가")
	r.mustRun()
	if _, err := m.Delete(context.Background(), []string{mirror.Key(prefix, "가")}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		res, err := r.run(syncer.Options{Full: true, MaxFileSize: 1000})
		_, _, ok := m.ReadRaw(t, mirror.Key(prefix, "가"))
		t.Logf("run %d: err %v status %s skipped %v failures %v mirror %+v", i, err, res.Summary.Status, res.Summary.Skipped, res.Summary.Failures, res.Summary.Mirror)
		if _, published := r.policies()["가"]; published && !ok && err == nil {
			t.Errorf("run %d recorded %s; the registry publishes 가 at %s, the mirror has no object for it", i, res.Summary.Status, r.policies()["가"].SHA)
		}
	}
}
