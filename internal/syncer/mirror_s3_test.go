package syncer_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/mirror/mirrortest"
	"github.com/knue/syncjob/internal/syncer"
)

// A full run deletes a policy whose registry delete fails: its policy:
// value stays published, so its object must stay too (the mirror's order: deletes
// go value first, object last; "a reader who sees a registry version finds
// its text"), as for a delete the write budget or the deadline leaves
// waiting. Review: mirrorWants dropped every name the plan deletes, so the
// full run's listing planned the same key as a foreign object and deleted
// it as one.
func TestMirrorS3_FullRun_RegistryDeleteFails_ObjectKept(t *testing.T) {
	t.Parallel()
	r, srv, _ := syncedWithS3(t, 0)
	r.repo.Remove("b/다.md")
	r.repo.Commit("delete 다")
	r.store.FailKeys(map[string]error{"policy:다": errors.New("boom")})
	res, err := r.run(syncer.Options{Full: true})
	t.Logf("run: %v; mirror %+v", err, res.Summary.Mirror)
	if _, ok := r.policies()["다"]; !ok {
		t.Fatal("setup: 다's registry delete landed")
	}
	if _, _, ok := srv.ReadRaw(t, mirror.Key(prefix, "다")); !ok {
		t.Errorf("다 is still published, but its object was deleted as a foreign one")
	}
}

// The same cause seen on a dry run: a full dry run that deletes one
// policy said its mirror would delete two objects (the policy's, and the
// same key again as a foreign object).
func TestMirrorS3_FullDryRun_OneDelete_OneObject(t *testing.T) {
	t.Parallel()
	r, _, _ := syncedWithS3(t, 0)
	r.repo.Remove("b/다.md")
	r.repo.Commit("delete 다")
	res, err := r.run(syncer.Options{Full: true, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if m := res.Summary.Mirror; m == nil || m.Deleted != 1 {
		t.Errorf("dry run: mirror %+v; want 1 object to delete", m)
	}
}

// syncedWithS3 is a rig synced into an S3 mirror: the seed and more
// policies x/p00.md … (none when more is 0), and a function that deletes
// the first n of those in one commit.
func syncedWithS3(t *testing.T, more int) (r *rig, srv *mirrortest.S3Server, deleteFirst func(n int)) {
	t.Helper()
	srv = mirrortest.NewS3Server(t)
	r = newRig(t).withMirror(s3Mirror(t, srv))
	r.seed()
	if more > 0 {
		for i := range more {
			r.repo.Write(fmt.Sprintf("x/p%02d.md", i), fmt.Sprintf("# p%02d\n", i))
		}
		r.repo.Commit("more")
	}
	r.mustRun()
	return r, srv, func(n int) {
		for i := range n {
			r.repo.Remove(fmt.Sprintf("x/p%02d.md", i))
		}
		r.repo.Commit(fmt.Sprintf("delete %d", n))
	}
}

// The same cause in the mirror guard: a full run deleting 10 of 30
// policies passes the registry's guard (MAX_DELETE 10), and the mirror
// holds one stray object. The mirror guard counts the 10 deleted
// policies' objects again as foreign (11 > 10, 37% > 20%) and refuses the
// run (exit 4), though the repair deletes one foreign object.
func TestMirrorS3_FullRun_TenDeletesOneStray_NotRefusedByTheMirrorGuard(t *testing.T) {
	t.Parallel()
	r, srv, deleteFirst := syncedWithS3(t, 27)
	srv.PutRaw(t, prefix+"stray/policy.md", []byte("foreign"))
	deleteFirst(10)
	if _, err := r.run(syncer.Options{Full: true}); err != nil {
		t.Errorf("full run deleting 10 of 30 with one stray object: %v", err)
	}
}

// --allow-mass-delete=N lets through only a reviewed plan deleting exactly
// N (docs/design.md, step 7). A full run whose registry plan deletes
// exactly 11 policies also has its mirror repair delete 40 foreign objects
// under the prefix: the mirror guard is skipped for any allowance
// (mirrorPlan: allowDeletes() == 0), so a count reviewed for the registry
// deletes any number of objects no one reviewed.
func TestMirrorS3_AllowExactlyN_DoesNotLiftTheMirrorGuard(t *testing.T) {
	t.Parallel()
	r, srv, deleteFirst := syncedWithS3(t, 12)
	for i := range 40 {
		srv.PutRaw(t, fmt.Sprintf("%sstray%02d/policy.md", prefix, i), []byte("foreign"))
	}
	deleteFirst(11)
	res, err := r.run(syncer.Options{Full: true, AllowDeletes: 11})
	t.Logf("run: %v; mirror %+v", err, res.Summary.Mirror)
	left := 0
	for i := range 40 {
		if _, _, ok := srv.ReadRaw(t, fmt.Sprintf("%sstray%02d/policy.md", prefix, i)); ok {
			left++
		}
	}
	if left == 0 && !errors.Is(err, syncer.ErrMirrorGuard) {
		t.Errorf("--allow-mass-delete=11 deleted 40 unreviewed foreign objects")
	}
}
