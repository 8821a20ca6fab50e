package syncer_test

import (
	"errors"
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
