package cloudflare_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"
)

// TestStore_PutMade_ResetMidBody_RetriedWithTheWholeBody: a bulk write of
// made pairs whose connection is reset after half its body was read is
// sent again from its first byte (GetBody gives a new reader, not the
// half-read one), with the same announced length, and every key lands.
func TestStore_PutMade_ResetMidBody_RetriedWithTheWholeBody(t *testing.T) {
	t.Parallel()
	const n = 40
	keys, pair, _ := madePairs(n)
	var tries atomic.Int32
	var lengths []int64
	var bodies [][]byte
	w := mustWorld(t, nil, onPuts(func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
		if tries.Add(1) == 1 {
			half := make([]byte, r.ContentLength/2)
			if _, err := io.ReadFull(r.Body, half); err != nil {
				return nil, err
			}
			return nil, &resetError{err: syscall.ECONNRESET}
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		lengths, bodies = append(lengths, r.ContentLength), append(bodies, body)
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
		return next.RoundTrip(r)
	}))
	if failed := w.store.PutMade(t.Context(), keys, pair); len(failed) != 0 {
		t.Fatalf("PutMade: %v", failed)
	}
	if len(bodies) != 1 {
		t.Fatalf("%d bulk writes after the reset, want 1", len(bodies))
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(bodies[0], &elems); err != nil || len(elems) != n || lengths[0] != int64(len(bodies[0])) {
		t.Errorf("retry after a reset sent %d elements (%v) in %d bytes announced as %d: want all %d, exactly", len(elems), err, len(bodies[0]), lengths[0], n)
	}
	if got := len(w.fake.Keys()); got != n {
		t.Errorf("stored %d keys, want %d", got, n)
	}
}

// resetError is a connection error as the network gives it.
type resetError struct{ err error }

func (e *resetError) Error() string { return "write tcp: " + e.err.Error() }
func (e *resetError) Unwrap() error { return e.err }
