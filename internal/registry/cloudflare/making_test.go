package cloudflare_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/registry"
)

// batchOfPairs is n made pairs of their own keys, whose making tells
// making when a pass over them begins and ends (pair 0, pair n-1).
func batchOfPairs(name string, n int, making *passes) ([]string, func(i int) registry.Pair) {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "policy:" + name + " " + strconv.Itoa(i)
	}
	return keys, func(i int) registry.Pair {
		if i == 0 {
			making.begin()
		}
		if i == n-1 {
			defer making.end()
		}
		v := `{"policyName":"` + keys[i][len("policy:"):] + `","sha":"0123456789abcdef0123456789abcdef01234567"}`
		return registry.Pair{Key: keys[i], Value: []byte(v)}
	}
}

// passes counts the passes over a batch's pairs under way, and the most
// at once.
type passes struct{ now, most atomic.Int32 }

func (p *passes) begin() {
	n := p.now.Add(1)
	for m := p.most.Load(); n > m && !p.most.CompareAndSwap(m, n); m = p.most.Load() {
	}
}

func (p *passes) end() { p.now.Add(-1) }

// largeBatch is the pairs of a batch large enough to be made one at a time.
const largeBatch = 1000

// TestStore_PutMade_TwoBatchesAtOnce_MadeOneAtATime: two large batches
// put at once, their bodies read slowly, are made one after the other
// (checked, then encoded as each is sent), never both at once: a batch of
// 10,000 in flight holds its indices, and only the one being made holds
// its garbage (docs/bench.md, "Where the memory goes"). Both land.
func TestStore_PutMade_TwoBatchesAtOnce_MadeOneAtATime(t *testing.T) {
	t.Parallel()
	var making passes
	w := mustWorld(t, nil, onPuts(func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
		var body []byte
		buf := make([]byte, 512)
		for {
			n, err := r.Body.Read(buf)
			body = append(body, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, err
			}
			time.Sleep(50 * time.Microsecond)
		}
		r = r.Clone(r.Context())
		r.Body, r.GetBody = io.NopCloser(strings.NewReader(string(body))), nil
		return next.RoundTrip(r)
	}))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, name := range []string{"가", "나"} {
		keys, pair := batchOfPairs(name, largeBatch, &making)
		wg.Go(func() {
			<-start
			if failed := w.store.PutMade(t.Context(), keys, pair); len(failed) != 0 {
				t.Errorf("PutMade %s: %d failed", name, len(failed))
			}
		})
	}
	close(start)
	wg.Wait()
	if most := making.most.Load(); most != 1 {
		t.Errorf("%d batches were made at once, want 1", most)
	}
	if got := len(w.fake.Keys()); got != 2*largeBatch {
		t.Errorf("stored %d keys, want %d", got, 2*largeBatch)
	}
}

// TestStore_PutMade_AnsweredBeforeItsBodyWasMade_NextBatchGoes: a bulk
// write answered before its body was read to the end (the transport here
// never reads or closes it) lets the next body be made once the answer is
// in: the next batch does not wait for a body no one will read.
func TestStore_PutMade_AnsweredBeforeItsBodyWasMade_NextBatchGoes(t *testing.T) {
	t.Parallel()
	var puts atomic.Int32
	w := mustWorld(t, nil, onPuts(func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
		if puts.Add(1) == 1 {
			if _, err := r.Body.Read(make([]byte, 8)); err != nil {
				return nil, err
			}
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Request: r,
				Body: io.NopCloser(strings.NewReader(`{"success":true,"errors":[],"messages":[],"result":{"successful_key_count":1000,"unsuccessful_keys":[]}}`))}, nil
		}
		return next.RoundTrip(r)
	}))
	var making passes
	first, firstPair := batchOfPairs("가", largeBatch, &making)
	if failed := w.store.PutMade(t.Context(), first, firstPair); len(failed) != 0 {
		t.Fatalf("first PutMade: %d failed", len(failed))
	}
	second, secondPair := batchOfPairs("나", largeBatch, &making)
	if failed := within(t, 10*time.Second, func() map[string]error { return w.store.PutMade(t.Context(), second, secondPair) }); len(failed) != 0 {
		t.Fatalf("second PutMade, after an answer that left its body unread: %d failed", len(failed))
	}
	if got := len(w.fake.Keys()); got != largeBatch {
		t.Errorf("stored %d keys, want the second batch's %d", got, largeBatch)
	}
}

// stalledBody is a store whose first bulk write stalls half read until
// the test ends: its body holds the making of large bodies meanwhile.
func stalledBody(t *testing.T) *world {
	t.Helper()
	reading, unblock := make(chan struct{}), make(chan struct{})
	var puts atomic.Int32
	w := mustWorld(t, nil, onPuts(func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
		if puts.Add(1) == 1 {
			if _, err := r.Body.Read(make([]byte, 8)); err != nil {
				return nil, err
			}
			close(reading)
			<-unblock
		}
		return next.RoundTrip(r)
	}))
	var making passes
	first, firstPair := batchOfPairs("가", largeBatch, &making)
	var wg sync.WaitGroup
	wg.Go(func() { w.store.PutMade(context.Background(), first, firstPair) })
	t.Cleanup(func() { close(unblock); wg.Wait() })
	<-reading
	return w
}

// within is put's outcome, failing the test when put takes longer than d.
func within(t *testing.T, d time.Duration, put func() map[string]error) map[string]error {
	t.Helper()
	done := make(chan map[string]error, 1)
	go func() { done <- put() }()
	select {
	case failed := <-done:
		return failed
	case <-time.After(d):
		t.Fatalf("still waiting after %s", d)
		return nil
	}
}

// TestStore_PutMade_ContextEndsWhileWaitingForAnotherBody_KeysFail: a
// large batch whose context ends while it waits for another body to be
// made fails its keys with the context's error, without waiting on.
func TestStore_PutMade_ContextEndsWhileWaitingForAnotherBody_KeysFail(t *testing.T) {
	t.Parallel()
	w := stalledBody(t)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel) // once it waits
	var making passes
	second, secondPair := batchOfPairs("나", largeBatch, &making)
	failed := within(t, 10*time.Second, func() map[string]error { return w.store.PutMade(ctx, second, secondPair) })
	for _, k := range second {
		if !errors.Is(failed[k], context.Canceled) {
			t.Fatalf("%s: %v, want context.Canceled", k, failed[k])
		}
	}
}

// TestStore_PutMade_SmallWrite_NotHeldByAStalledLargeBody: a write of a
// few pairs (the lease's renewal, a batch of the default 50) goes while a
// large body stalls half sent: only large bodies are made one at a time.
func TestStore_PutMade_SmallWrite_NotHeldByAStalledLargeBody(t *testing.T) {
	t.Parallel()
	w := stalledBody(t)
	var making passes
	lease, leasePair := batchOfPairs("lease", 1, &making)
	if failed := within(t, 10*time.Second, func() map[string]error { return w.store.PutMade(t.Context(), lease, leasePair) }); len(failed) != 0 {
		t.Fatalf("a one-pair write behind a stalled large body: %v", failed)
	}
	if keys := w.fake.Keys(); !slices.Contains(keys, "policy:lease 0") {
		t.Errorf("the one-pair write did not land: %v", keys)
	}
}

// TestStore_PutMade_PairPanics_NextBatchGoes: a batch whose pair panics
// while it is checked lets the next large batch be made (a caller that
// recovers is not left with a store whose puts all wait).
func TestStore_PutMade_PairPanics_NextBatchGoes(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, nil)
	var making passes
	keys, pair := batchOfPairs("가", largeBatch, &making)
	func() {
		defer func() { _ = recover() }()
		w.store.PutMade(t.Context(), keys, func(i int) registry.Pair { panic("a pair that cannot be made") })
	}()
	if failed := within(t, 10*time.Second, func() map[string]error { return w.store.PutMade(t.Context(), keys, pair) }); len(failed) != 0 {
		t.Fatalf("PutMade after a panic: %d failed", len(failed))
	}
}
