package cloudflare_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
)

// madePairs are n policy pairs made on demand, counting how often one is
// made.
func madePairs(n int) (keys []string, pair func(i int) registry.Pair, made *atomic.Int64) {
	made = &atomic.Int64{}
	keys = make([]string, n)
	for i := range keys {
		keys[i] = "policy:정책 " + strconv.Itoa(i)
	}
	pair = func(i int) registry.Pair {
		made.Add(1)
		v := `{"policyName":"정책 ` + strconv.Itoa(i) + `","title":"제목 \"` + strings.Repeat("x", i%7) + `\"","sha":"0123456789abcdef0123456789abcdef01234567"}`
		return registry.Pair{Key: keys[i], Value: []byte(v), Metadata: json.RawMessage(`{"sha":"0123456789abcdef0123456789abcdef01234567"}`)}
	}
	return keys, pair, made
}

// sentPuts records each bulk write as it reaches the HTTP client under the
// store: how many pairs were made when it went out and once its body was
// read, its announced length and its body.
type sentPuts struct {
	mu    sync.Mutex
	sends []sentPut
}

type sentPut struct {
	madeBefore, madeAfter int64
	length                int64
	chunked               bool
	body                  []byte
}

func (s *sentPuts) list() []sentPut {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sentPut(nil), s.sends...)
}

// watchPuts wraps the store's HTTP client so that s records its bulk
// writes; made counts the pairs made.
func watchPuts(s *sentPuts, made *atomic.Int64) func(*cloudflare.Config) {
	return onPuts(func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
		sp := sentPut{madeBefore: made.Load(), length: r.ContentLength, chunked: len(r.TransferEncoding) > 0}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		sp.madeAfter, sp.body = made.Load(), body
		s.mu.Lock()
		s.sends = append(s.sends, sp)
		s.mu.Unlock()
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
		return next.RoundTrip(r)
	})
}

// TestStore_PutMade_BodyEncodedAsItIsSent: a bulk write of made pairs goes
// out before any of its elements is encoded (the pairs made by then are
// those the check made, one each) and each element is made as the body is
// read, so no body of 10,000 entries is held whole (docs/bench.md, "How we
// got here", "Memory, fifth pass"). The request announces its exact length
// (not chunked) and carries what Put would: every pair lands as made.
func TestStore_PutMade_BodyEncodedAsItIsSent(t *testing.T) {
	t.Parallel()
	const n = 60
	keys, pair, made := madePairs(n)
	var sent sentPuts
	w := mustWorld(t, nil, watchPuts(&sent, made))
	if failed := w.store.PutMade(t.Context(), keys, pair); len(failed) != 0 {
		t.Fatalf("PutMade: %v", failed)
	}
	sends := sent.list()
	if len(sends) != 1 {
		t.Fatalf("%d bulk writes, want 1", len(sends))
	}
	s := sends[0]
	if s.madeBefore != n || s.madeAfter != 2*n {
		t.Errorf("pairs made when the request went out: %d, once its body was read: %d; want %d (the check) then %d (each encoded as it is read)", s.madeBefore, s.madeAfter, n, 2*n)
	}
	if s.chunked || s.length != int64(len(s.body)) {
		t.Errorf("request announced %d bytes (chunked %v) for a body of %d: want its exact length", s.length, s.chunked, len(s.body))
	}
	var elems []map[string]any
	if err := json.Unmarshal(s.body, &elems); err != nil || len(elems) != n {
		t.Fatalf("body is not a JSON array of %d elements (%d, %v): %.200s", n, len(elems), err, s.body)
	}
	for _, i := range []int{0, 1, n / 2, n - 1} {
		v, md, ok := w.fake.Value(keys[i])
		if want := pair(i); !ok || string(v) != string(want.Value) || string(md) != string(want.Metadata) {
			t.Errorf("%s = %s %s (%v), want %s %s", keys[i], v, md, ok, want.Value, want.Metadata)
		}
	}
}

// TestStore_PutMade_RetriedAndReSent_SameElementsAgain: a bulk write of
// made pairs that meets a 5xx is sent again by the transport with the same
// body, encoded anew; keys Cloudflare reports unsuccessful are re-sent
// alone. Every key lands.
func TestStore_PutMade_RetriedAndReSent_SameElementsAgain(t *testing.T) {
	t.Parallel()
	const n = 20
	keys, pair, made := madePairs(n)
	var sent sentPuts
	w := mustWorld(t, nil, watchPuts(&sent, made))
	w.fake.FailNext(cloudflaretest.ServerError(503))
	w.fake.FailKeyFraction(0.3) // seeded
	if failed := w.store.PutMade(t.Context(), keys, pair); len(failed) != 0 {
		t.Fatalf("PutMade: %v", failed)
	}
	sends := sent.list()
	if len(sends) < 3 {
		t.Fatalf("%d bulk writes, want the first, its retry after the 503 and a re-send of the unsuccessful keys", len(sends))
	}
	if !bytes.Equal(sends[0].body, sends[1].body) || sends[1].length != int64(len(sends[1].body)) {
		t.Errorf("the retry after a 503 sent\n%.300s\nafter\n%.300s", sends[1].body, sends[0].body)
	}
	var again []json.RawMessage
	if err := json.Unmarshal(sends[2].body, &again); err != nil || len(again) == 0 || len(again) >= n {
		t.Errorf("re-send of the unsuccessful keys: %d elements (%v), want some, not all %d", len(again), err, n)
	}
	for _, e := range again {
		if !bytes.Contains(sends[0].body, e) {
			t.Errorf("re-sent element %s is not one the first body had", e)
		}
	}
	if got := len(w.fake.Keys()); got != n {
		t.Errorf("stored %d keys, want %d", got, n)
	}
}

// TestStore_PutMade_OverTheBulkByteLimit_SplitsIntoBulkRequests: made pairs
// are split at the byte limit as Put's are, by their measured lengths.
func TestStore_PutMade_OverTheBulkByteLimit_SplitsIntoBulkRequests(t *testing.T) {
	t.Parallel()
	const limit = 1_000_000
	w := mustWorld(t, nil, func(c *cloudflare.Config) { c.MaxBulkBytes = limit })
	big := bytes.Repeat([]byte("x"), limit/5)
	keys := make([]string, 6)
	for i := range keys {
		keys[i] = "big:" + itoa(i)
	}
	pair := func(i int) registry.Pair { return registry.Pair{Key: keys[i], Value: big} }
	if failed := w.store.PutMade(t.Context(), keys, pair); len(failed) != 0 {
		t.Fatalf("PutMade: %v", failed)
	}
	if got := w.fake.Requests(cloudflaretest.BulkPut); got != 2 {
		t.Errorf("bulk writes for 1.2 MB at a 1 MB limit = %d, want 2", got)
	}
	if got := len(w.fake.Keys()); got != 6 {
		t.Errorf("stored %d keys, want 6", got)
	}
}
