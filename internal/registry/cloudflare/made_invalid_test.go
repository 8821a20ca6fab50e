package cloudflare_test

import (
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
)

// TestStore_PutMade_NoValidPair_NoRequest: a put of made pairs none of
// which is valid fails each one before any request, as Put does: it sends
// no empty bulk write (a request of the API's 1,200 a window, for nothing).
func TestStore_PutMade_NoValidPair_NoRequest(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, nil)
	keys := []string{"policy:" + strings.Repeat("x", 600), "dup", "dup"}
	failed := w.store.PutMade(t.Context(), keys, func(i int) registry.Pair { return registry.Pair{Key: keys[i], Value: []byte("v")} })
	if len(failed) != 2 {
		t.Errorf("failed = %v, want the key too long and the duplicate", failed)
	}
	if got := w.fake.Requests(cloudflaretest.BulkPut); got != 0 {
		t.Errorf("%d bulk writes for no valid pair, want none", got)
	}
	if failed := w.store.Put(t.Context(), []registry.Pair{{Key: keys[0], Value: []byte("v")}}); len(failed) != 1 {
		t.Errorf("Put: failed = %v, want the key too long", failed)
	}
	if got := w.fake.Requests(cloudflaretest.BulkPut); got != 0 {
		t.Errorf("%d bulk writes after Put of no valid pair, want none", got)
	}
}
