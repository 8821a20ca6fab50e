package cloudflare_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
	"github.com/knue/syncjob/internal/registry/registrytest"
)

// ListPages hands over each page of 1,000 keys as it is read (a full run
// keeps a little of each key, never the whole listing), in List's order,
// and stops at the first error the caller returns.
func TestStore_ListPages_AThousandAPage_StopsAtAnError(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, nil)
	for i := range 2500 {
		w.fake.Set("queue:"+itoa(i), []byte("v"), json.RawMessage(`{"sha":"`+itoa(i)+`"}`), 0)
	}
	var want []string
	for _, it := range registrytest.MustList(t, w.store, "queue:") {
		want = append(want, it.Key)
	}
	w.fake.ResetCounts()
	var sizes []int
	var got []string
	err := w.store.ListPages(t.Context(), "queue:", func(page []registry.Item) error {
		sizes = append(sizes, len(page))
		if n := w.fake.Requests(cloudflaretest.List); n != len(sizes) {
			t.Errorf("page %d handed over after %d list requests: the listing was read ahead", len(sizes), n)
		}
		for _, it := range page {
			got = append(got, it.Key)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{1000, 1000, 500}, sizes); diff != "" {
		t.Errorf("page sizes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("keys, as List gives them (-want +got):\n%s", diff)
	}
	w.fake.ResetCounts()
	stop := errors.New("stop")
	if err := w.store.ListPages(t.Context(), "queue:", func([]registry.Item) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("ListPages = %v, want the caller's error", err)
	}
	if n := w.fake.Requests(cloudflaretest.List); n != 1 {
		t.Errorf("list requests after the first page's error = %d, want 1", n)
	}
}
