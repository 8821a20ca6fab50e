package cloudflare_test

import (
	"context"
	"errors"
	"io"
	"net/http"
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

// TestStore_PutMade_TwoBatchesAtOnce_MadeOneAtATime: two batches put at
// once, their bodies read slowly, are made one after the other (checked,
// then encoded as each is sent), never both at once: a batch of 10,000 in
// flight holds its indices, and only the one being made holds its garbage
// (docs/bench.md, "Where the memory goes"). Both land.
func TestStore_PutMade_TwoBatchesAtOnce_MadeOneAtATime(t *testing.T) {
	t.Parallel()
	var making passes
	w := mustWorld(t, nil, onPuts(func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
		var body []byte
		buf := make([]byte, 64)
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
	const n = 80
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, name := range []string{"가", "나"} {
		keys, pair := batchOfPairs(name, n, &making)
		wg.Go(func() {
			<-start
			if failed := w.store.PutMade(t.Context(), keys, pair); len(failed) != 0 {
				t.Errorf("PutMade %s: %v", name, failed)
			}
		})
	}
	close(start)
	wg.Wait()
	if most := making.most.Load(); most != 1 {
		t.Errorf("%d batches were made at once, want 1", most)
	}
	if got := len(w.fake.Keys()); got != 2*n {
		t.Errorf("stored %d keys, want %d", got, 2*n)
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
				Body: io.NopCloser(strings.NewReader(`{"success":true,"errors":[],"messages":[],"result":{"successful_key_count":3,"unsuccessful_keys":[]}}`))}, nil
		}
		return next.RoundTrip(r)
	}))
	var making passes
	first, firstPair := batchOfPairs("가", 3, &making)
	if failed := w.store.PutMade(t.Context(), first, firstPair); len(failed) != 0 {
		t.Fatalf("first PutMade: %v", failed)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	second, secondPair := batchOfPairs("나", 3, &making)
	if failed := w.store.PutMade(ctx, second, secondPair); len(failed) != 0 {
		t.Fatalf("second PutMade, after an answer that left its body unread: %v", failed)
	}
	if got := len(w.fake.Keys()); got != 3 {
		t.Errorf("stored %d keys, want the second batch's 3", got)
	}
}

// TestStore_PutMade_ContextEndsWhileAnotherBodyIsMade_KeysFailAtOnce: a
// batch whose context ends while it waits for another body to be made
// fails its keys with the context's error, without waiting on.
func TestStore_PutMade_ContextEndsWhileAnotherBodyIsMade_KeysFailAtOnce(t *testing.T) {
	t.Parallel()
	reading, unblock := make(chan struct{}), make(chan struct{})
	var puts atomic.Int32
	w := mustWorld(t, nil, onPuts(func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
		if puts.Add(1) == 1 {
			if _, err := r.Body.Read(make([]byte, 8)); err != nil {
				return nil, err
			}
			close(reading)
			<-unblock // holds the body half made
		}
		return next.RoundTrip(r)
	}))
	var making passes
	first, firstPair := batchOfPairs("가", 3, &making)
	var wg sync.WaitGroup
	wg.Go(func() { w.store.PutMade(t.Context(), first, firstPair) })
	defer wg.Wait()
	defer close(unblock)
	<-reading
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	second, secondPair := batchOfPairs("나", 3, &making)
	failed := w.store.PutMade(ctx, second, secondPair)
	for _, k := range second {
		if !errors.Is(failed[k], context.Canceled) {
			t.Errorf("%s: %v, want context.Canceled", k, failed[k])
		}
	}
}
