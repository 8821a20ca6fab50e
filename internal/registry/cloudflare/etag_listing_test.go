package cloudflare_test

import (
	"testing"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// TestRegistry_Policies_KeepsContentETag: a full run's listing of the
// policies over Cloudflare (built from each key's metadata, no value read)
// gives each entry the content mirror's ETag its value records, as a
// listing of values does: without it every mirror object reads as
// unrecorded (mirror.Unrecorded) and is uploaded again on every full run,
// and a move rewrites its entry without the ETag.
func TestRegistry_Policies_KeepsContentETag(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, nil)
	reg := registry.New(w.store)
	e := policy.Entry{PolicyName: "학칙", Title: "학칙", Status: policy.StatusActive, SHA: "0123456789abcdef0123456789abcdef01234567",
		Path: "a/학칙.md", LastUpdated: "2026-11-26T16:00:00Z", ContentETag: "9e107d9d372bb6826bd81d3542a419d6"}
	if failed := reg.Write(t.Context(), registry.PutPolicy(e)); len(failed) != 0 {
		t.Fatalf("Write: %v", failed)
	}
	got, problems, err := reg.Policies(t.Context())
	if err != nil || problems != nil {
		t.Fatalf("Policies: problems %v, err %v", problems, err)
	}
	if got["학칙"].ContentETag != e.ContentETag {
		t.Errorf("listed entry's ContentETag = %q, want %q (what its value records)", got["학칙"].ContentETag, e.ContentETag)
	}
}
