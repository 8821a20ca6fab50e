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
	del string
}

// PutPolicy writes policy:{e.PolicyName} (see PolicyPair).
func PutPolicy(e policy.Entry) Write { p := PolicyPair(e); return Write{put: &p} }

// PutQueue writes queue:{q.PolicyName} (see QueuePair).
func PutQueue(q policy.QueueEntry) Write { p := QueuePair(q); return Write{put: &p} }

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
	if w.put != nil {
		return w.put.Key
	}
	return w.del
}

// IsDelete reports whether the write deletes its key.
func (w Write) IsDelete() bool { return w.put == nil }

// Write applies the writes: every put in one Store.Put, then every delete
// in one Store.Delete (a backend splits them as its API requires). It
// returns nil when every key landed, else each failed key's error; one
// failed key never stops the others.
func (r *Registry) Write(ctx context.Context, writes ...Write) map[string]error {
	var (
		puts []Pair
		dels []string
	)
	for _, w := range writes {
		if w.put != nil {
			puts = append(puts, *w.put)
		} else {
			dels = append(dels, w.del)
		}
	}
	var failed map[string]error
	if len(puts) > 0 {
		failed = r.store.Put(ctx, puts)
	}
	if len(dels) > 0 {
		failed = merge(failed, r.store.Delete(ctx, dels))
	}
	return failed
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
