package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/knue/syncjob/internal/policy"
)

// queueMetadata is the metadata of a queue key.
type queueMetadata struct {
	SHA        string `json:"sha"`
	RetryCount int    `json:"retryCount"`
	Failed     bool   `json:"failed,omitempty"`
}

// FailedQueue returns the queue entries that record a failure (errorMessage
// set), by name. On a backend that lists without values it reads only the
// values whose metadata says failed, or that carry no metadata; Queue's
// error contract applies.
func (r *Registry) FailedQueue(ctx context.Context) (map[string]policy.QueueEntry, error) {
	items, err := r.store.List(ctx, policy.QueuePrefix)
	if err != nil {
		return nil, err
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
				return nil, err
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
			out[strings.TrimPrefix(it.Key, policy.QueuePrefix)] = q
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
	return q, r.getObject(ctx, QueueKey(name), &q)
}

// DeadLetter returns dead-letter:{name}, with QueueEntry's error contract.
func (r *Registry) DeadLetter(ctx context.Context, name string) (policy.DeadLetter, error) {
	var d policy.DeadLetter
	return d, r.getObject(ctx, DeadLetterKey(name), &d)
}

// CountPolicies returns how many policy:{name} keys the registry holds,
// from a listing (no value is read).
func (r *Registry) CountPolicies(ctx context.Context) (int, error) {
	items, err := r.store.List(ctx, policy.PolicyPrefix)
	if err != nil {
		return 0, fmt.Errorf("registry: list %s: %w", policy.PolicyPrefix, err)
	}
	return len(items), nil
}

func (r *Registry) getObject(ctx context.Context, key string, v any) error {
	raw, err := r.store.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("registry: read %s: %w", key, err)
	}
	if err := decodeObject(raw, v); err != nil {
		var bad *DecodeError
		return bad.add(key, err)
	}
	return nil
}

// Policy returns the entry of one policy; present is false when the key is
// absent. A value that does not decode is a *DecodeError (present is then
// true); any other error means the read failed.
func (r *Registry) Policy(ctx context.Context, name string) (e policy.Entry, present bool, err error) {
	raw, err := r.store.Get(ctx, PolicyKey(name))
	if errors.Is(err, policy.ErrNotFound) {
		return policy.Entry{}, false, nil
	}
	if err != nil {
		return policy.Entry{}, false, fmt.Errorf("registry: read %s: %w", PolicyKey(name), err)
	}
	if err := decodeObject(raw, &e); err != nil {
		var bad *DecodeError
		return policy.Entry{}, true, bad.add(PolicyKey(name), err)
	}
	return e, true, nil
}
