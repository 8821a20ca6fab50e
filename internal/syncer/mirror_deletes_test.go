package syncer_test

import (
	"testing"
	"time"

	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/syncer"
)

// checkMirrorPublishes: exit 0 means every object under the prefix is a
// policy the registry publishes.
func checkMirrorPublishes(t *testing.T, r *cfRig, objs map[string]mirror.Object, what string) {
	t.Helper()
	published := map[string]bool{}
	for _, name := range r.policyNames() {
		published[name] = true
	}
	for k := range objs {
		if name, _ := mirror.PolicyNameOf(prefix, k); !published[name] {
			t.Errorf("%s: %s in the mirror, which no policy publishes", what, k)
		}
	}
}

// Found by the soak with -soak.mirror (seed 49243): a delete whose policy:
// key landed while its queue: entry's removal failed fails its policy, so
// its object was kept; the run recorded the mirror converged, and the next
// run, finding no entry, had nothing to delete: it exited success with the
// object of a policy the registry no longer publishes. Such a failed delete
// leaves the mirror not converged: the next run is full and removes it.
func TestMirror_DeleteWhoseQueueRemovalFailed_NextRunRemovesTheObject(t *testing.T) {
	t.Parallel()
	r, m := mirroredCFRig(t, 10, false)
	if _, err := r.run(t.Context(), syncer.Options{}); err != nil {
		t.Fatal(err)
	}
	const gone = "정책 0003"
	r.repo.Remove("규정/03/정책 0003.md")
	r.head = r.repo.Commit("delete one")
	r.cf.FailKeys(registry.QueueKey(gone))
	res, err := r.run(t.Context(), syncer.Options{})
	if err == nil {
		t.Fatalf("the delete whose queue removal fails: exit 0 (%s)", res.Summary.Status)
	}
	if _, ok := m.Objects()[mirror.Key(prefix, gone)]; !ok {
		t.Fatal("the object went with the failed delete: the test no longer makes the case it is about")
	}
	if s := res.Summary.Mirror; s.Converged != "" {
		t.Errorf("mirror recorded converged %q with the object of a policy whose key may be gone", s.Converged)
	}
	r.cf.FailKeys()
	res, err = r.run(t.Context(), syncer.Options{ConsistencyWindow: time.Millisecond})
	if err != nil {
		t.Fatalf("next run: %v", err)
	}
	checkMirrorPublishes(t, r, m.Objects(), "next run ("+res.Summary.Mode+")")
}
