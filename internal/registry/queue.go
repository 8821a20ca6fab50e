package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/knue/syncjob/internal/policy"
)

// FailedQueue returns the queue entries that record a failure (errorMessage
// set), by name. On a backend that lists without values it reads only the
// values whose metadata says failed, or that carry no metadata; Queue's
// error contract applies.
func (r *Registry) FailedQueue(ctx context.Context) (map[string]policy.QueueEntry, error) {
	items, err := r.store.List(ctx, QueuePrefix)
	if err != nil {
		return nil, fmt.Errorf("registry: read queue: %w", err)
	}
	out := map[string]policy.QueueEntry{}
	var bad *DecodeError
	for _, it := range items {
		if it.Value == nil {
			var md queueMetadata
			if len(it.Metadata) > 0 && json.Unmarshal(it.Metadata, &md) == nil && md.SHA != "" && !md.Failed {
				continue
			}
			var ok bool
			if it, ok, err = r.fill(ctx, it); err != nil {
				return nil, fmt.Errorf("registry: read queue: %w", err)
			} else if !ok {
				continue
			}
		}
		var q policy.QueueEntry
		if err := decodeObject(it.Value, &q); err != nil {
			bad = bad.add(it.Key, err)
			continue
		}
		if q.ErrorMessage != nil {
			out[strings.TrimPrefix(it.Key, QueuePrefix)] = q
		}
	}
	if bad != nil {
		return out, bad
	}
	return out, nil
}

// QueueEntry returns queue:{name}: an error wrapping policy.ErrNotFound when
// absent, a *DecodeError when its value does not decode.
func (r *Registry) QueueEntry(ctx context.Context, name string) (policy.QueueEntry, error) {
	var q policy.QueueEntry
	return q, r.getObject(ctx, "queue entry", QueueKey(name), &q)
}

// DeadLetter returns dead-letter:{name}, with QueueEntry's error contract.
func (r *Registry) DeadLetter(ctx context.Context, name string) (policy.DeadLetter, error) {
	var d policy.DeadLetter
	return d, r.getObject(ctx, "dead letter", DeadLetterKey(name), &d)
}

// Owed reads, for each name, its queue entry and its policy entry, in as few
// requests as the store allows (ManyGetter: two keys a name, 100 keys a
// request). A name without a queue entry is absent from queue; one without
// a policy entry absent from entries. Values that do not decode are left
// out and named in a *DecodeError returned with the rest.
func (r *Registry) Owed(ctx context.Context, names []string) (queue map[string]policy.QueueEntry, entries map[string]policy.Entry, err error) {
	queue, entries = map[string]policy.QueueEntry{}, map[string]policy.Entry{}
	var bad *DecodeError
	for chunk := range slices.Chunk(names, maxManyKeys/2) {
		keys := make([]string, 0, 2*len(chunk))
		for _, n := range chunk {
			keys = append(keys, QueueKey(n), PolicyKey(n))
		}
		got, err := r.getMany(ctx, keys)
		if err != nil {
			return nil, nil, fmt.Errorf("registry: read owed entries: %w", err)
		}
		for _, n := range chunk {
			if raw, ok := got[QueueKey(n)]; ok {
				var q policy.QueueEntry
				if err := decodeObject(raw, &q); err != nil {
					bad = bad.add(QueueKey(n), err)
				} else {
					queue[n] = q
				}
			}
			if raw, ok := got[PolicyKey(n)]; ok {
				var e policy.Entry
				if err := decodeObject(raw, &e); err != nil {
					bad = bad.add(PolicyKey(n), err)
				} else {
					entries[n] = e
				}
			}
		}
	}
	if bad != nil {
		return queue, entries, bad
	}
	return queue, entries, nil
}

// RequestRetry adds names to what the last run says waits for retry
// (lastRun.pending), so that the next run retries them even when the head
// has not moved: what a person's "deadletter retry" needs. Without a last
// run there is nothing to add to: the next run looks at the whole queue.
func (r *Registry) RequestRetry(ctx context.Context, names ...string) error {
	last, err := r.LastRun(ctx)
	if err != nil || last == nil {
		return err
	}
	for _, n := range names {
		if !slices.Contains(last.Pending, n) {
			last.Pending = append(last.Pending, n)
		}
	}
	w := Write{put: &Pair{Key: LastRunKey, Value: MustJSON(*last)}}
	if failed := r.Write(ctx, w); failed != nil {
		return &BatchError{Op: "request retry", Failed: failed}
	}
	return nil
}
