package syncer_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/mirror/mirrortest"
	"github.com/knue/syncjob/internal/syncer"
)

// Found by the soak with -soak.mirror (seed 49391, cloudflare): an add
// whose registry write failed until a dead letter held it back left its
// object in the mirror (the titles step uploads before the registry's
// writes). Full runs took the object for the head's, as wanted, and
// recorded the mirror converged; once the file was renamed away an
// incremental run exited success with the mirror holding the text of a
// policy the registry never published. A full run now takes an object
// the registry does not publish and the plan does not write for a stray,
// and deletes it.
func TestMirror_HeldBackAddsObject_FullRunDeletesIt_NoFalseSuccess(t *testing.T) {
	t.Parallel()
	m := mirrortest.NewMemory(prefix)
	r := newRig(t).withMirror(m)
	r.seed()
	r.mustRun()
	r.repo.Write("b/라.md", "# 라\n")
	r.repo.Commit("add 라")
	failUntilDeadLetter(t, r, "라")
	key := mirror.Key(prefix, "라")
	if _, ok := m.Objects()[key]; !ok {
		t.Fatalf("no object of 라 after its failed adds: the test no longer makes the stray it is about")
	}
	res, err := r.run(syncer.Options{Full: true})
	if !errors.Is(err, syncer.ErrPartial) || len(res.Summary.HeldBack) != 1 {
		t.Fatalf("full run: %v, held back %v; want partial, 라 held back", err, res.Summary.HeldBack)
	}
	if _, ok := m.Objects()[key]; ok {
		t.Errorf("the full run kept the object of 라, which the registry does not publish (converged %q)", res.Summary.Mirror.Converged)
	}
	r.repo.Remove("b/라.md")
	r.repo.Write("b/마.md", "# 라\n") // renamed away: 라 leaves the head
	r.repo.Commit("rename 라 to 마")
	res, err = r.run(syncer.Options{})
	if err != nil {
		t.Fatalf("after the rename: %v (mode %s)", err, res.Summary.Mode)
	}
	for k := range m.Objects() {
		name, _ := mirror.PolicyNameOf(prefix, k)
		if _, published := r.policies()[name]; !published {
			t.Errorf("exit 0 (mode %s) with %s in the mirror, which no policy publishes", res.Summary.Mode, k)
		}
	}
}

// Found by the soak with -soak.mirror (seeds 80009, 80357, 80457): a run
// that reads an empty registry and no run record — a first sync, or a
// run just after one, whose reads lag — took the objects of policies the
// head no longer has for foreign and deleted them, while the registry
// (not read yet) still published them. A first sync leaves such
// policy-shaped objects, named, partial, and the next full run, with a
// record to trust, removes them.
func TestMirror_FirstSyncFindsPolicyObjects_LeavesThem_NextRunRemoves(t *testing.T) {
	t.Parallel()
	m := mirrortest.NewMemory(prefix)
	r := newRig(t).withMirror(m)
	old := mirror.Key(prefix, "옛 정책")
	m.PutRaw(t, old, []byte("---\npolicyName: 옛 정책\n---\n# 옛 정책\n"))
	m.PutRaw(t, prefix+"notes.txt", []byte("not a policy's")) // no policy's key: deleted as before
	r.seed()
	res, err := r.run(syncer.Options{})
	if !errors.Is(err, syncer.ErrPartial) || res.Summary.Mirror == nil || res.Summary.Mirror.Converged != "" {
		t.Fatalf("first sync: %v, mirror %+v; want partial, not converged", err, res.Summary.Mirror)
	}
	if _, ok := m.Objects()[old]; !ok || !slices.Contains(failedNames(res.Summary.Failures), "옛 정책") {
		t.Errorf("first sync: object kept %v, failures %v; want it left, its policy named", ok, failedNames(res.Summary.Failures))
	}
	if _, ok := m.Objects()[prefix+"notes.txt"]; ok {
		t.Errorf("first sync kept %snotes.txt, which no policy's key is", prefix)
	}
	res, err = r.run(syncer.Options{})
	if err != nil || res.Summary.Mode != "full" || res.Summary.Mirror.Converged == "" {
		t.Fatalf("next run: %v, %s, mirror %+v; want full, success, converged", err, res.Summary.Mode, res.Summary.Mirror)
	}
	if _, ok := m.Objects()[old]; ok {
		t.Errorf("the next run kept %s", old)
	}
	if len(res.Summary.Pending) != 0 {
		t.Errorf("pending %v: nothing is owed once the object is judged", res.Summary.Pending)
	}
}

// Found by a reviewer of the fix above: eleven adds whose writes failed
// until dead letters held them back left eleven objects, which the full
// runs after took for strays under the mirror's mass-delete guard: every
// run was refused, ordinary edits with it. Those objects are the head's
// own policies' and publish nothing: the guard does not count them.
func TestMirror_ManyDeadLetteredAdds_GuardDoesNotRefuse(t *testing.T) {
	t.Parallel()
	m := mirrortest.NewMemory(prefix)
	r := newRig(t).withMirror(m)
	r.seed()
	r.mustRun()
	fail := map[string]error{}
	for i := range 11 {
		name := fmt.Sprintf("신규 %02d", i)
		r.repo.Write("c/"+name+".md", "# "+name+"\n")
		fail["policy:"+name] = errors.New("kv down")
	}
	r.repo.Commit("add 11")
	r.store.FailKeys(fail)
	for range 3 {
		_, _ = r.run(syncer.Options{})
	}
	r.store.FailKeys(nil)
	if dead, objs := len(r.deadLetters()), len(m.Objects()); dead != 11 || objs != 14 {
		t.Fatalf("%d dead letters, %d objects: want 11 held back, their objects beside the 3 published", dead, objs)
	}
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Commit("edit 가")
	res, err := r.run(syncer.Options{})
	if errors.Is(err, syncer.ErrMirrorGuard) || !errors.Is(err, syncer.ErrPartial) || len(res.Summary.HeldBack) != 11 {
		t.Fatalf("run after the dead letters: %v, held back %d; want partial naming the 11, not refused", err, len(res.Summary.HeldBack))
	}
	if got := r.policies()["가"].Title; got != "가 개정" {
		t.Errorf("the ordinary edit of 가 did not land: title %q", got)
	}
	if objs := len(m.Objects()); objs != 3 {
		t.Errorf("mirror holds %d objects, want the 3 published", objs)
	}
}

// Found by the same reviewer: an object a first sync leaves unjudged was
// named by its policy, and so owed; a name too long for a registry key
// then failed every later run reading what is owed, for good. Such a
// name is reported by the object's key, owed by no one.
func TestMirror_FirstSyncUnjudged_NameNoKey_NotOwed(t *testing.T) {
	t.Parallel()
	m := mirrortest.NewMemory(prefix)
	r := newRig(t).withMirror(m)
	key := mirror.Key(prefix, strings.Repeat("가", 200)) // a 600-byte name
	m.PutRaw(t, key, []byte("---\npolicyName: x\n---\n# x\n"))
	r.seed()
	res, err := r.run(syncer.Options{})
	if !errors.Is(err, syncer.ErrPartial) || !slices.Contains(failedNames(res.Summary.Failures), key) || len(res.Summary.Pending) != 0 {
		t.Fatalf("first sync: %v, failures %v, pending %d; want partial naming the key, nothing owed", err, failedNames(res.Summary.Failures), len(res.Summary.Pending))
	}
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Commit("edit 가")
	if _, err := r.run(syncer.Options{}); err != nil {
		t.Errorf("next run: %v; want success, the object judged", err)
	}
	if got := r.policies()["가"].Title; got != "가 개정" {
		t.Errorf("the edit of 가 did not land: title %q", got)
	}
}
