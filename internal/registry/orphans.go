package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/knue/syncjob/internal/policy"
)

// QueueVersions returns the sha of every queue entry, by name: what a full
// run needs to find announcements no policy matches. A listing that
// carries metadata costs no read of a value; an entry without metadata is
// read. An entry that does not decode is listed with sha "" (it matches
// no policy, so a full run rewrites or removes it).
func (r *Registry) QueueVersions(ctx context.Context) (map[string]string, error) {
	items, err := r.store.List(ctx, QueuePrefix)
	if err != nil {
		return nil, fmt.Errorf("registry: read queue: %w", err)
	}
	out := make(map[string]string, len(items))
	for _, it := range items {
		name := strings.TrimPrefix(it.Key, QueuePrefix)
		var md queueMetadata
		if it.Value == nil && len(it.Metadata) > 0 && json.Unmarshal(it.Metadata, &md) == nil && md.SHA != "" {
			out[name] = md.SHA
			continue
		}
		it, ok, err := r.fill(ctx, it)
		if err != nil {
			return nil, fmt.Errorf("registry: read queue: %w", err)
		} else if !ok {
			continue
		}
		var q policy.QueueEntry
		_ = decodeObject(it.Value, &q)
		out[name] = q.SHA
	}
	return out, nil
}
