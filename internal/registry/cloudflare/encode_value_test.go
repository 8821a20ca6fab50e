package cloudflare_test

import (
	"bytes"
	"testing"

	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare"
)

// A valid 17 MiB value (KV takes 25 MiB) of control characters is 107 MB
// as a JSON string, over Cloudflare's 100 MB body: Put and PutMade failed
// it on every run with a 413, though base64 fits it in 23 MB (an
// adversarial helper). A value goes base64 when that is shorter, and reads
// back as it was. (Here at a tenth of the scale: a 1 MB body limit, a
// value of 200 KiB, 1.2 MB as a JSON string.)
func TestPut_ValueWhoseJSONIsLongerThanBase64_SentBase64(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, func(c *cloudflare.Config) { c.MaxBulkBytes = 1_000_000 })
	v := bytes.Repeat([]byte{0x01}, 200<<10)
	if err := registry.CheckPair(registry.Pair{Key: "policy:big", Value: v}); err != nil {
		t.Fatalf("setup: CheckPair: %v", err)
	}
	keys := []string{"policy:big2"}
	for name, put := range map[string]func() map[string]error{
		"Put": func() map[string]error {
			return w.store.Put(t.Context(), []registry.Pair{{Key: "policy:big", Value: v}})
		},
		"PutMade": func() map[string]error {
			return w.store.PutMade(t.Context(), keys, func(i int) registry.Pair { return registry.Pair{Key: keys[i], Value: v} })
		},
	} {
		if failed := put(); len(failed) != 0 {
			t.Errorf("%s of a valid value of 200 KiB: %v", name, failed)
		}
	}
	for _, k := range []string{"policy:big", "policy:big2"} {
		if got, err := w.store.Get(t.Context(), k); err != nil || !bytes.Equal(got, v) {
			t.Errorf("%s reads back %d bytes (%v), want the %d written", k, len(got), err, len(v))
		}
	}
}
