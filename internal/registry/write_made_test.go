package registry

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/policy"
)

// madeStore is a PairMaker that records how Registry.Write calls it.
type madeStore struct {
	*Memory
	keys  []string
	pairs []Pair
	puts  int
}

func (s *madeStore) Put(ctx context.Context, pairs []Pair) map[string]error {
	s.puts++
	return s.Memory.Put(ctx, pairs)
}

func (s *madeStore) PutMade(ctx context.Context, keys []string, pair func(i int) Pair) map[string]error {
	s.keys = keys
	for i := range keys {
		s.pairs = append(s.pairs, pair(i))
	}
	return s.Memory.Put(ctx, s.pairs)
}

// TestWrite_PolicyAndQueuePutsMadeWhenTheStoreTakesThem: a policy or queue
// put holds its entry, not its encoded pair, and a store that takes pairs
// one at a time (cloudflare's PutMade) gets the keys and makes each pair
// when it encodes it: a batch of 10,000 entries does not hold their
// encoded values beside the request body.
func TestWrite_PolicyAndQueuePutsMadeWhenTheStoreTakesThem(t *testing.T) {
	t.Parallel()
	e := policy.Entry{PolicyName: "학칙", Title: "학칙", Status: policy.StatusActive, SHA: "a1", Path: "학칙.md", LastUpdated: "2026-11-25T16:00:00Z"}
	q := policy.QueueEntry{PolicyName: "학칙", SHA: "a1", Operation: policy.OpAdd, CreatedAt: "2026-11-25T16:00:00Z"}
	ws := []Write{PutPolicy(e), PutQueue(q), DeleteDeadLetter("학칙")}
	for i, w := range ws[:2] {
		if w.put != nil || w.make == nil {
			t.Errorf("write %d holds its encoded pair", i)
		}
	}
	s := &madeStore{Memory: NewMemory(func() time.Time { return time.Unix(0, 0) })}
	if failed := New(s).Write(t.Context(), ws...); failed != nil {
		t.Fatalf("Write: %v", failed)
	}
	if s.puts != 0 {
		t.Errorf("Put called %d times, want PutMade only", s.puts)
	}
	if diff := cmp.Diff([]string{PolicyKey("학칙"), QueueKey("학칙")}, s.keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Pair{PolicyPair(e), QueuePair(q)}, s.pairs); diff != "" {
		t.Errorf("pairs made (-want +got):\n%s", diff)
	}
}
