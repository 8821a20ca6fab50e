package registry

import (
	"context"
	"time"

	"github.com/knue/syncjob/internal/policy"
)

// Write is one key a caller puts or deletes, through Registry.Write. Build
// it with PutPolicy, PutQueue, PutDeadLetter, DeletePolicy, DeleteQueue or
// DeleteDeadLetter: callers say what they write, the registry owns the keys
// and their encoding.
type Write struct {
	put *Pair
	// key and make are a put whose pair is made only when the store takes
	// it (PutPolicy, PutQueue): a batch holds its entries, not their
	// encoded values beside the request body (docs/bench.md).
	key  string
	make func() Pair
	del  string
}

// PutPolicy writes policy:{e.PolicyName} (see PolicyPair).
func PutPolicy(e policy.Entry) Write {
	return Write{key: PolicyKey(e.PolicyName), make: func() Pair { return PolicyPair(e) }}
}

// PutQueue writes queue:{q.PolicyName} (see QueuePair).
func PutQueue(q policy.QueueEntry) Write {
	return Write{key: QueueKey(q.PolicyName), make: func() Pair { return QueuePair(q) }}
}

// PutDeadLetter writes dead-letter:{d.PolicyName}.
func PutDeadLetter(d policy.DeadLetter) Write { p := DeadLetterPair(d); return Write{put: &p} }

// DeletePolicy removes policy:{name}.
func DeletePolicy(name string) Write { return Write{del: PolicyKey(name)} }

// DeleteQueue removes queue:{name}.
func DeleteQueue(name string) Write { return Write{del: QueueKey(name)} }

// DeleteDeadLetter removes dead-letter:{name}.
func DeleteDeadLetter(name string) Write { return Write{del: DeadLetterKey(name)} }

// Key is the key the write puts or deletes.
func (w Write) Key() string {
	switch {
	case w.put != nil:
		return w.put.Key
	case w.make != nil:
		return w.key
	}
	return w.del
}

// pair is the pair the write puts.
func (w Write) pair() Pair {
	if w.make != nil {
		return w.make()
	}
	return *w.put
}

// IsDelete reports whether the write deletes its key.
func (w Write) IsDelete() bool { return w.put == nil && w.make == nil }

// Write applies the writes: every put in one Store.Put, then every delete
// in one Store.Delete (a backend splits them as its API requires). It
// returns nil when every key landed, else each failed key's error; one
// failed key never stops the others.
func (r *Registry) Write(ctx context.Context, writes ...Write) map[string]error {
	puts, dels := splitWrites(writes)
	var failed map[string]error
	if len(puts) > 0 {
		failed = r.put(ctx, puts)
	}
	if len(dels) > 0 {
		failed = merge(failed, r.store.Delete(ctx, dels))
	}
	return failed
}

// splitWrites are the puts and the deletes' keys of writes; the puts are
// writes itself when it has no delete (a batch of 10,000 puts is not
// copied, nor grown by appends).
func splitWrites(writes []Write) (puts []Write, dels []string) {
	n := 0
	for _, w := range writes {
		if w.IsDelete() {
			n++
		}
	}
	if n == 0 {
		return writes, nil
	}
	puts, dels = make([]Write, 0, len(writes)-n), make([]string, 0, n)
	for _, w := range writes {
		if w.IsDelete() {
			dels = append(dels, w.del)
		} else {
			puts = append(puts, w)
		}
	}
	return puts, dels
}

// PairMaker is a Store that takes a put's pairs one at a time, as it
// encodes them (internal/registry/cloudflare): pair(i) makes the pair of
// keys[i], and may be called more than once. Its outcome is Put's.
type PairMaker interface {
	PutMade(ctx context.Context, keys []string, pair func(i int) Pair) map[string]error
}

// put writes puts in one Store.Put, or PutMade when the store takes the
// pairs one at a time: no pair is then made before the store needs it.
func (r *Registry) put(ctx context.Context, puts []Write) map[string]error {
	return r.WriteMade(ctx, len(puts), func(i int) string { return puts[i].Key() }, func(i int) Pair { return puts[i].pair() })
}

// WriteMade puts n pairs made by one value, not a Write each: key(i) is
// the i-th's key, made once as the puts are sent, and pair(i) its pair,
// made when the store takes it (a PairMaker may make it more than once).
// A batch of 10,000 puts then holds no key, function or Write a put until
// it is sent (docs/bench.md, "How we got here", "Memory, eighth pass").
// Its outcome is Write's.
func (r *Registry) WriteMade(ctx context.Context, n int, key func(i int) string, pair func(i int) Pair) map[string]error {
	if n == 0 {
		return nil
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = key(i)
	}
	if pm, ok := r.store.(PairMaker); ok {
		return pm.PutMade(ctx, keys, pair)
	}
	pairs := make([]Pair, n)
	for i := range pairs {
		pairs[i] = pair(i)
	}
	return r.store.Put(ctx, pairs)
}

func merge(into, from map[string]error) map[string]error {
	if len(from) == 0 {
		return into
	}
	if into == nil {
		into = make(map[string]error, len(from))
	}
	for k, err := range from {
		into[k] = err
	}
	return into
}

// withTTL is a write of a raw pair that expires: the lease, the run history.
func withTTL(key string, value []byte, ttl time.Duration) Write {
	return Write{put: &Pair{Key: key, Value: value, TTL: ttl}}
}
