package syncer_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/mirror/mirrortest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/syncer"
)

// What a run leaves in the content mirror that its record must tell the
// next run: a version the registry does not publish is drift only a full
// run's listing finds.

// seededFiles are the files rig.seed commits.
var seededFiles = map[string]string{"a/가.md": "# 가\n", "a/나.md": "# 나\n", "b/다.md": "# 다\n"}

// edit가 commits a second edition of 가.
func (r *rig) edit가() {
	r.repo.Write("a/가.md", "# 가\n\n둘째 판\n")
	r.repo.Commit("edit 가")
}

// revert가ThenMirrorIsHead commits 가 back to its seeded version (the one
// the registry holds) and runs once: the run must succeed and leave m
// holding the seeded files.
func (r *rig) revert가ThenMirrorIsHead(m *mirrortest.Memory) {
	r.t.Helper()
	r.repo.Write("a/가.md", "# 가\n")
	r.repo.Commit("revert 가")
	res, err := r.run(syncer.Options{})
	if err != nil {
		r.t.Fatalf("the run after the revert: %v", err)
	}
	r.mirrorIsHead(m, seededFiles, res)
}

// mirrorIsHead checks that m holds the objects of files, the head.
func (r *rig) mirrorIsHead(m *mirrortest.Memory, files map[string]string, res syncer.Result) {
	r.t.Helper()
	read := func(k string) []byte { b, _, _ := m.ReadRaw(r.t, k); return b }
	if diff := cmp.Diff(r.mirrorWant(files), mustMirrored(r.t, m, read)); diff != "" {
		r.t.Errorf("%s run (%s) recorded %s; mirror differs from the head (-want +got):\n%s",
			res.Summary.Mode, res.Summary.ModeReason, res.Summary.Status, diff)
	}
}

// An object uploaded for a policy whose registry write then failed holds
// a version the registry does not publish. When the head moves back to the
// registry's version, no item puts the policy again: the run must not
// record the mirror converged, so that the next run is full and its
// listing repairs the object (review).
func TestMirrorCarry_UploadedButItsRegistryWriteFailed_HeadReverts_NextRunRepairs(t *testing.T) {
	t.Parallel()
	r, m := syncedMirroredRig(t)
	r.edit가()
	r.store.FailKeys(map[string]error{"policy:가": errors.New("503 write refused")})
	if _, err := r.run(syncer.Options{}); !errors.Is(err, syncer.ErrPartial) {
		t.Fatalf("run 2: %v, want partial", err)
	}
	r.store.FailKeys(nil)
	r.revert가ThenMirrorIsHead(m)
}

// A full run the mirror's guard refuses (too many foreign objects to
// delete) uploads nothing: the listing and the guard come before the
// titles step, which uploads as the files stream by. The run after the
// operator's cleanup, on a head moved back, then finds the mirror as the
// registry has it (review: the refused run had uploaded the new version).
func TestMirrorCarry_MirrorGuardRefuses_NothingUploaded_NextRunRepairs(t *testing.T) {
	t.Parallel()
	r, m := syncedMirroredRig(t)
	for i := range 15 {
		m.PutRaw(t, fmt.Sprintf("%sstray%02d/policy.md", prefix, i), []byte("foreign"))
	}
	r.edit가()
	if _, err := r.run(syncer.Options{Full: true}); !errors.Is(err, syncer.ErrMirrorGuard) {
		t.Fatalf("run: %v, want the mirror guard", err)
	}
	b, _, _ := m.ReadRaw(t, mirror.Key(prefix, "가"))
	if doc, _, _ := mirror.ParseFrontMatter(b); doc.SHA != r.policies()["가"].SHA {
		t.Errorf("the refused run changed the mirror: 가's object at %s, registry at %s", doc.SHA, r.policies()["가"].SHA)
	}
	for i := range 15 { // the operator clears the strays; the author reverts
		m.Delete(context.Background(), []string{fmt.Sprintf("%sstray%02d/policy.md", prefix, i)})
	}
	r.revert가ThenMirrorIsHead(m)
}

// listFails is a mirror whose listing fails while fail is set.
type listFails struct {
	*mirrortest.Memory
	fail bool
}

func (f *listFails) List(ctx context.Context) ([]mirror.Listed, error) {
	if f.fail {
		return nil, fmt.Errorf("s3: list policies/: %w: 503", mirror.ErrUnavailable)
	}
	return f.Memory.List(ctx)
}

// The same when the mirror's listing fails: the run fails before it
// uploads anything.
func TestMirrorCarry_ListingFails_NothingUploaded_NextRunRepairs(t *testing.T) {
	t.Parallel()
	mem := mirrortest.NewMemory(prefix)
	m := &listFails{Memory: mem}
	r := newRig(t).withMirror(m)
	r.seed()
	r.mustRun()
	r.edit가()
	m.fail = true
	if _, err := r.run(syncer.Options{Full: true}); err == nil {
		t.Fatal("run with a failed listing succeeded")
	}
	m.fail = false
	r.revert가ThenMirrorIsHead(mem)
}

// A policy whose name makes no valid mirror key (a backslash) was never
// mirrored; deleting it in the same commit as another policy must still
// delete the other's object (review: the one bad key refused the whole
// delete call, and the run counted every key of it deleted).
func TestMirrorCarry_DeleteOfANameNeverMirrored_OthersStillDeleted(t *testing.T) {
	t.Parallel()
	m := mirrortest.NewMemory(prefix)
	r := newRig(t)
	r.seed()
	r.repo.Write(`w/a\b.md`, "# backslash\n")
	r.repo.Commit("seed")
	r.mustRun() // no mirror yet
	r.withMirror(m)
	_, _ = r.run(syncer.Options{}) // the fill: partial, a\b cannot be mirrored
	r.repo.Remove(`w/a\b.md`)
	r.repo.Remove("b/다.md")
	r.repo.Commit("delete both")
	for i := 0; i < 2; i++ {
		res, err := r.run(syncer.Options{})
		if _, _, ok := m.ReadRaw(t, mirror.Key(prefix, "다")); ok && err == nil {
			t.Errorf("run %d (%s) recorded %s with deleted 다's object in the mirror (summary %+v)", i, res.Summary.Mode, res.Summary.Status, res.Summary.Mirror)
		}
	}
	if _, _, ok := m.ReadRaw(t, mirror.Key(prefix, "다")); ok {
		t.Error("deleted 다's object is still in the mirror")
	}
}

// A move made while no mirror was configured records no object: when the
// mirror comes back, its fill must upload the moved policy's object, whose
// front matter names the new path (review: the move kept the old ETag,
// which the old object still matched, and every full run said converged).
func TestMirrorCarry_MovedWhileTheMirrorWasOff_FillUploadsTheNewPath(t *testing.T) {
	t.Parallel()
	r, m := syncedMirroredRig(t)
	r.s.Mirror = nil
	r.repo.Move("b/다.md", "z/다.md")
	r.repo.Commit("move 다")
	r.mustRun()
	r.withMirror(m)
	head := map[string]string{"a/가.md": "# 가\n", "a/나.md": "# 나\n", "z/다.md": "# 다\n"}
	r.mirrorIsHead(m, head, r.mustRun()) // the fill (full: the mirror is new)
	full, _ := r.run(syncer.Options{Full: true})
	r.mirrorIsHead(m, head, full) // no full run ever repairs it
}

// A folder mirror whose prefix holds a symlink named like a policy's
// folder: the run must not write through it (review: it overwrote a file
// outside the prefix, then deleted the link as foreign and recorded
// success without the object). The upload fails, the link goes as a
// foreign object, and the next run uploads the object into a real folder.
func TestMirrorCarry_FolderPrefixHoldsASymlink_NothingWrittenThrough_NextRunUploads(t *testing.T) {
	t.Parallel()
	dir, outside := t.TempDir(), t.TempDir()
	f, err := mirror.NewFolder(dir, prefix)
	if err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(outside, "policy.md")
	if err := os.WriteFile(keep, []byte("not ours"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "policies"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "policies", "가")); err != nil {
		t.Fatal(err)
	}
	r := newRig(t).withMirror(f)
	r.seed()
	res, err := r.run(syncer.Options{})
	if b, _ := os.ReadFile(keep); string(b) != "not ours" {
		t.Errorf("a file outside the prefix was overwritten: %.40q", b)
	}
	if _, serr := os.Stat(filepath.Join(dir, "policies", "가", "policy.md")); serr != nil && err == nil {
		t.Errorf("run recorded %s without 가's object: %v", res.Summary.Status, serr)
	}
	if _, err := r.run(syncer.Options{}); err != nil {
		t.Fatalf("the run after: %v", err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "policies", "가")); err != nil || !fi.IsDir() {
		t.Errorf("가's folder after the next run: %v, %v; want a real folder", fi, err)
	}
	if b, _ := os.ReadFile(keep); string(b) != "not ours" {
		t.Errorf("the next run overwrote the file outside the prefix: %.40q", b)
	}
}

// lostAnswer is a mirror whose put of key stores the object but answers
// with an error, as a put whose answer times out.
type lostAnswer struct {
	*mirrortest.Memory
	key string
}

func (l *lostAnswer) Put(ctx context.Context, o mirror.Object) (string, error) {
	etag, err := l.Memory.Put(ctx, o)
	if err == nil && o.Key == l.key {
		return "", fmt.Errorf("s3: put %s: %w: timeout awaiting response", o.Key, mirror.ErrUnavailable)
	}
	return etag, err
}

// A put that failed may have stored its object: the run does not record
// the mirror converged, and once the head moves back the next run's
// listing repairs it (review: only puts that answered were counted).
func TestMirrorCarry_PutFailedButLanded_HeadReverts_NextRunRepairs(t *testing.T) {
	t.Parallel()
	mem := mirrortest.NewMemory(prefix)
	m := &lostAnswer{Memory: mem}
	r := newRig(t).withMirror(m)
	r.seed()
	r.mustRun()
	r.repo.Write("a/나.md", "# 나\n\n둘째 판\n") // its upload lands: the store is up
	r.edit가()
	m.key = mirror.Key(prefix, "가")
	if _, err := r.run(syncer.Options{}); !errors.Is(err, syncer.ErrPartial) {
		t.Fatalf("run 2: %v, want partial", err)
	}
	m.key = ""
	r.repo.Write("a/나.md", "# 나\n")
	r.revert가ThenMirrorIsHead(mem)
}

// The same when the run's only upload is that lost answer: the store
// failed every upload, so the run stops as an outage before the registry's
// writes — and its object may still be stored. The next run must not
// trust the mirror as converged: once the head moves back it repairs it.
func TestMirrorCarry_OnlyPutFailedButLanded_Outage_HeadReverts_NextRunRepairs(t *testing.T) {
	t.Parallel()
	mem := mirrortest.NewMemory(prefix)
	m := &lostAnswer{Memory: mem}
	r := newRig(t).withMirror(m)
	r.seed()
	r.mustRun()
	r.edit가()
	m.key = mirror.Key(prefix, "가")
	if _, err := r.run(syncer.Options{}); !errors.Is(err, syncer.ErrOutage) {
		t.Fatalf("run 2: %v, want an outage", err)
	}
	m.key = ""
	r.revert가ThenMirrorIsHead(mem)
}

// batchFails is a mirror whose delete of bad fails as its own batch would,
// the other keys deleted.
type batchFails struct {
	*mirrortest.Memory
	bad string
}

func (b *batchFails) Delete(ctx context.Context, keys []string) (map[string]error, error) {
	var rest []string
	for _, k := range keys {
		if k != b.bad {
			rest = append(rest, k)
		}
	}
	if _, err := b.Memory.Delete(ctx, rest); err != nil {
		return nil, err
	}
	err := fmt.Errorf("s3: delete 1 keys: %w: 503", mirror.ErrUnavailable)
	return map[string]error{b.bad: err}, err
}

// When one batch of a mirror delete fails, only its keys fail: the target
// names every key not deleted (review: every key of the call failed, and
// the run retried policies whose objects were gone).
func TestMirrorCarry_DeleteOneBatchFails_OnlyItsKeysFail(t *testing.T) {
	t.Parallel()
	mem := mirrortest.NewMemory(prefix)
	m := &batchFails{Memory: mem, bad: mirror.Key(prefix, "나")}
	r := newRig(t).withMirror(m)
	r.seed()
	r.mustRun()
	r.repo.Remove("a/나.md")
	r.repo.Remove("b/다.md")
	r.repo.Commit("delete both")
	res, _ := r.run(syncer.Options{})
	if _, _, ok := mem.ReadRaw(t, mirror.Key(prefix, "다")); ok {
		t.Fatal("setup: 다's object was not deleted")
	}
	var names []string
	for _, f := range res.Summary.Failures {
		names = append(names, f.PolicyName)
	}
	if len(names) != 1 || names[0] != "나" {
		t.Errorf("failures %v; only 나's delete failed (mirror %+v)", names, res.Summary.Mirror)
	}
}

// A put the target refused stored nothing: the failure is the policy's,
// retried by the next run as any failure is, and the mirror stays
// converged (review: counting every failed put as possibly stored made
// each upload failure cost the next run a full listing).
func TestMirrorCarry_PutRefused_NextRunStaysIncremental(t *testing.T) {
	t.Parallel()
	r, m := syncedMirroredRig(t)
	r.repo.Write("a/가.md", "# 가\n\n새 판\n")
	r.repo.Write("a/나.md", "# 나\n\n새 판\n") // its upload lands: the store takes the keys
	r.repo.Commit("edit")
	m.FailPut(mirror.Key(prefix, "가"), mirror.ErrAccessDenied)
	res, err := r.run(syncer.Options{})
	if !errors.Is(err, syncer.ErrPartial) {
		t.Fatalf("run: %v, want partial", err)
	}
	if res.Summary.Mirror.Converged == "" {
		t.Errorf("a refused put (nothing stored) left the mirror unconverged")
	}
	m.FailPut(mirror.Key(prefix, "가"), nil)
	if res, err = r.run(syncer.Options{}); err != nil {
		t.Fatal(err)
	}
	if res.Summary.Mode != differ.ModeIncremental {
		t.Errorf("retry run: mode %s (%s), want incremental", res.Summary.Mode, res.Summary.ModeReason)
	}
}

// A foreign object under the prefix whose key no target may delete ("..":
// it could resolve outside the prefix) stays in the mirror, which AI
// Search indexes. The full run that finds it must not record success and
// the mirror converged (review: only a log line said so): it is partial,
// naming the key, the mirror is not converged, so the next run is full
// and names it again, until an operator removes it. Nothing is deleted.
func TestMirrorCarry_UnsafeForeignKey_PartialNamingIt_UntilAnOperatorRemovesIt(t *testing.T) {
	t.Parallel()
	r, m := syncedMirroredRig(t)
	unsafe := prefix + "x/../../secret-draft/policy.md"
	m.PutRaw(t, unsafe, []byte("# not a policy of the head\n"))
	res, err := r.run(syncer.Options{Full: true})
	t.Logf("err %v, status %s, failures %+v, mirror %+v", err, res.Summary.Status, res.Summary.Failures, res.Summary.Mirror)
	if res.Summary.Status == policy.RunSuccess && res.Summary.Mirror != nil && res.Summary.Mirror.Converged != "" {
		t.Errorf("the run records success and the mirror converged at %s while %d objects under %s include one the head does not have", res.Summary.Mirror.Converged, len(m.Objects()), prefix)
	}
	for i := range 2 { // the full run, then the one after it, full again
		if !errors.Is(err, syncer.ErrPartial) || !slices.Contains(failedNames(res.Summary.Failures), unsafe) || res.Summary.Mode != differ.ModeFull {
			t.Errorf("run %d: err %v, %s, failures %v: want partial, full, naming %s", i, err, res.Summary.Mode, failedNames(res.Summary.Failures), unsafe)
		}
		if ms := res.Summary.Mirror; ms == nil || ms.Converged != "" {
			t.Errorf("run %d: mirror %+v, want not converged", i, ms)
		}
		if _, _, ok := m.ReadRaw(t, unsafe); !ok {
			t.Fatalf("run %d deleted %s", i, unsafe)
		}
		res, err = r.run(syncer.Options{})
	}
	m.DeleteRaw(t, unsafe) // the operator
	res, err = r.run(syncer.Options{})
	if err != nil || res.Summary.Mode != differ.ModeFull || res.Summary.Mirror == nil || res.Summary.Mirror.Converged == "" {
		t.Errorf("after the operator's cleanup: err %v, %s, mirror %+v: want success, full, converged", err, res.Summary.Mode, res.Summary.Mirror)
	}
	r.mirrorIsHead(m, seededFiles, res)
}

// The keys of foreign objects a run names as failures (one it may not
// delete, one whose delete failed) are no policy: the next run owes no
// registry entry for them, and reading one by name failed every run once
// the key was longer than a registry key may be (review). The mirror left
// unconverged makes the next run list and name them again.
func TestMirrorCarry_ForeignKeysNamedAsFailures_NotOwed_LongOneDoesNotStopTheNextRun(t *testing.T) {
	t.Parallel()
	r, m := syncedMirroredRig(t)
	long := prefix + "x/../" + strings.Repeat("a", 600) + "/policy.md"
	stray := prefix + "stray/policy.md"
	m.PutRaw(t, long, []byte("# not a policy of the head\n"))
	m.PutRaw(t, stray, []byte("foreign"))
	m.FailDelete(stray, errors.New("503 slow down"))
	res, err := r.run(syncer.Options{Full: true})
	for i := range 2 {
		if got := failedNames(res.Summary.Failures); !errors.Is(err, syncer.ErrPartial) || !slices.Contains(got, long) || !slices.Contains(got, stray) {
			t.Fatalf("run %d: %v, failures %v: want partial naming both foreign keys", i, err, got)
		}
		if p := res.Summary.Pending; slices.Contains(p, long) || slices.Contains(p, stray) {
			t.Errorf("run %d owes the foreign keys: pending %v", i, p)
		}
		res, err = r.run(syncer.Options{})
	}
}
