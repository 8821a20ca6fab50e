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

// TestWriteMade_KeysAndPairsMadeByOneValue: WriteMade makes each key once,
// in order, as the puts are sent, and each pair only when the store takes
// it: a PairMaker gets the keys and the callback, any other store the
// pairs; nothing is sent for no puts.
func TestWriteMade_KeysAndPairsMadeByOneValue(t *testing.T) {
	t.Parallel()
	names := []string{"학칙", "규정", "지침"}
	entry := func(i int) policy.Entry {
		return policy.Entry{PolicyName: names[i], Title: names[i], Status: policy.StatusActive, SHA: "a1", Path: names[i] + ".md", LastUpdated: "2026-11-26T16:00:00Z"}
	}
	var keysMade, pairsMade int
	key := func(i int) string { keysMade++; return PolicyKey(names[i]) }
	pair := func(i int) Pair { pairsMade++; return PolicyPair(entry(i)) }
	made := &madeStore{Memory: NewMemory(func() time.Time { return time.Unix(0, 0) })}
	if failed := New(made).WriteMade(t.Context(), len(names), key, pair); failed != nil {
		t.Fatalf("WriteMade: %v", failed)
	}
	if keysMade != 3 || pairsMade != 3 || made.puts != 0 {
		t.Errorf("%d keys and %d pairs made, Put called %d times; want 3, 3 and PutMade only", keysMade, pairsMade, made.puts)
	}
	if diff := cmp.Diff([]string{PolicyKey("학칙"), PolicyKey("규정"), PolicyKey("지침")}, made.keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	plain := NewMemory(func() time.Time { return time.Unix(0, 0) })
	reg := New(plain)
	if failed := reg.WriteMade(t.Context(), len(names), key, pair); failed != nil {
		t.Fatalf("WriteMade, a store without PutMade: %v", failed)
	}
	entries, _, err := reg.Entries(t.Context(), names)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range names {
		if diff := cmp.Diff(entry(i), entries[name]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	keysMade, pairsMade = 0, 0
	if failed := reg.WriteMade(t.Context(), 0, key, pair); failed != nil || keysMade != 0 || pairsMade != 0 {
		t.Errorf("no puts: %v, %d keys and %d pairs made; want nothing", failed, keysMade, pairsMade)
	}
}
