package cloudflare_test

import (
	"context"
	"net/http"
	"runtime"
	"strconv"
	"testing"
	"weak"

	"github.com/knue/syncjob/internal/registry"
)

// TestStore_Put_ValuesLetGoOnceInTheBody checks that a bulk write does not
// hold its pairs' values while the request that carries them is sent: at
// Cloudflare's 10,000 pairs a batch of entries would be held twice, as
// values and as the body. When the bulk request goes out, a GC collects
// every value the caller let go of (the syncer lets its batch's go:
// takeWrites).
func TestStore_Put_ValuesLetGoOnceInTheBody(t *testing.T) {
	t.Parallel()
	const n = 200
	var values []weak.Pointer[[512]byte]
	alive := -1
	w := mustWorld(t, nil, onPuts(func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
		if alive < 0 {
			runtime.GC()
			alive = 0
			for _, v := range values {
				if v.Value() != nil {
					alive++
				}
			}
		}
		return next.RoundTrip(r)
	}))
	pairs := func() []registry.Pair {
		out := make([]registry.Pair, n)
		for i := range out {
			v := new([512]byte)
			for j := range v {
				v[j] = 'a'
			}
			values = append(values, weak.Make(v))
			out[i] = registry.Pair{Key: "policy:" + strconv.Itoa(i), Value: v[:]}
		}
		return out
	}
	if failed := w.store.Put(context.Background(), pairs()); len(failed) != 0 {
		t.Fatalf("Put: %v", failed)
	}
	if alive != 0 {
		t.Errorf("%d of %d values still held when their bulk request was sent, want none", alive, n)
	}
	if _, _, ok := w.fake.Value("policy:" + strconv.Itoa(n-1)); !ok {
		t.Error("the last pair did not land")
	}
}
