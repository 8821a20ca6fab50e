package cloudflare_test

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"weak"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// TestStore_PutMade_NoValueHeldBesideTheBody: PutMade makes each pair when
// it checks it and again when it encodes it into the request body, and
// holds none in between: when it makes the last pair, every value made
// before is collectable (a store that made the batch's pairs first, then
// encoded them, would hold them all beside the body). What lands is what
// Put writes; a duplicate key and metadata over the limit fail alone.
func TestStore_PutMade_NoValueHeldBesideTheBody(t *testing.T) {
	t.Parallel()
	const n = 100
	w := mustWorld(t, nil, nil)
	keys := make([]string, 0, n+2)
	for i := range n {
		keys = append(keys, "policy:"+strconv.Itoa(i))
	}
	keys = append(keys, "dup", "dup")
	var made []weak.Pointer[[512]byte]
	alive := map[int]int{} // at each making of the last pair: values made before still held
	pair := func(i int) registry.Pair {
		if i == n-1 {
			runtime.GC()
			held := 0
			for _, v := range made {
				if v.Value() != nil {
					held++
				}
			}
			alive[len(alive)] = held
		}
		v := new([512]byte)
		copy(v[:], strings.Repeat(strconv.Itoa(i%10), 512))
		made = append(made, weak.Make(v))
		p := registry.Pair{Key: keys[i], Value: v[:]}
		if i == 7 {
			p.Metadata = json.RawMessage(`"` + strings.Repeat("m", policy.MaxMetadataBytes) + `"`)
		}
		return p
	}
	failed := w.store.PutMade(context.Background(), keys, pair)
	if len(failed) != 2 || !errors.Is(failed["dup"], registry.ErrDuplicateKey) || !errors.Is(failed["policy:7"], policy.ErrTooLarge) {
		t.Errorf("failed = %v, want the duplicate and the metadata too large alone", failed)
	}
	if len(alive) != 2 || alive[0] != 0 || alive[1] != 0 {
		t.Errorf("values made before the last one still held when it was made (check, encode): %v, want none", alive)
	}
	for _, i := range []int{0, 6, 8, n - 1} {
		v, _, ok := w.fake.Value(keys[i])
		if want := strings.Repeat(strconv.Itoa(i%10), 512); !ok || string(v) != want {
			t.Errorf("%s = %.20q (%v), want %.20q", keys[i], v, ok, want)
		}
	}
}
