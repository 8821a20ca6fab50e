package registry

import (
	"context"
	"encoding/json"
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
