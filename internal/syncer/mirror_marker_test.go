package syncer_test

import (
	"testing"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/mirror/mirrortest"
	"github.com/knue/syncjob/internal/syncer"
)

// TestMirror_S3FolderMarker_LeftAlone_RunsSucceedAndConverge: the S3
// console's "Create folder" (and rclone mkdir, Cyberduck) stores an empty
// object whose key ends in "/", such as the prefix made by hand before the
// first sync. Runs leave it alone: the first succeeds, and the next on an
// unchanged head is not full. (An adversarial helper found such a marker
// taken for an unsafe key: every run partial, naming it, and full, the
// mirror never converged.)
func TestMirror_S3FolderMarker_LeftAlone_RunsSucceedAndConverge(t *testing.T) {
	t.Parallel()
	for _, marker := range []string{prefix, prefix + "가/"} {
		t.Run(marker, func(t *testing.T) {
			t.Parallel()
			srv := mirrortest.NewS3Server(t)
			srv.PutRaw(t, marker, nil)
			r := newRig(t).withMirror(s3Mirror(t, srv))
			r.seed()
			for i, opt := range []syncer.Options{{}, {}, {Full: true}} { // the first sync, the next, a daily reconcile
				res, err := r.run(opt)
				if err != nil || (i == 1 && res.Summary.Mode == differ.ModeFull) {
					t.Errorf("run %d: %v, mode %s (%s), failures %v: a folder marker %q keeps runs partial or full", i, err, res.Summary.Mode, res.Summary.ModeReason, failedNames(res.Summary.Failures), marker)
				}
			}
			if _, _, ok := srv.ReadRaw(t, marker); !ok {
				t.Errorf("the folder marker %q is gone", marker)
			}
		})
	}
}
