package syncer_test

import (
	"testing"

	"github.com/knue/syncjob/internal/mirror/mirrortest"
	"github.com/knue/syncjob/internal/syncer"
)

// TestMirror_Cloudflare_FullRunAfterSync_NothingToRepair: over Cloudflare,
// whose full run lists the policies from their keys' metadata, a full run
// right after a first sync with a content mirror finds what each entry
// records of its upload (contentEtag) and uploads nothing: the mirror
// already holds every object as recorded.
func TestMirror_Cloudflare_FullRunAfterSync_NothingToRepair(t *testing.T) {
	t.Parallel()
	r := newCFRig(t, 12, nil)
	r.s.Mirror, r.s.MirrorPrefix = mirrortest.NewMemory(prefix), prefix
	if _, err := r.run(t.Context(), syncer.Options{}); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	res, err := r.run(t.Context(), syncer.Options{Full: true})
	if err != nil {
		t.Fatalf("full run: %v", err)
	}
	if m := res.Summary.Mirror; m == nil || m.Uploaded != 0 || m.Repaired != 0 {
		t.Errorf("full run's mirror = %+v, want nothing uploaded or repaired", m)
	}
}
