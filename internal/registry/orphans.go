package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/strs"
)

// QueueVersions returns the version of every queue entry, sorted by name,
// each name once: what a full run needs to find announcements no policy
// matches. A listing that carries metadata costs no read of a value; an
// entry without metadata is read. An entry that does not decode is listed
// with sha "" (it matches no policy, so a full run rewrites or removes it).
// When leave is not nil, the entries it reports are left out as they are
// listed. On success it is not nil, even for an empty queue. The listing
// is read a page at a time and only the names and shas are kept, in shared
// chunks (docs/bench.md, "A full run's memory").
func (r *Registry) QueueVersions(ctx context.Context, leave func(policy.Queued) bool) ([]policy.Queued, error) {
	var s strs.Chunks
	out := []policy.Queued{} // not nil: the queue was listed, if empty
	err := r.listPages(ctx, QueuePrefix, func(items []Item) error {
		for _, it := range items {
			sha, ok, err := r.queuedSHA(ctx, it)
			if err != nil {
				return err
			}
			q := policy.Queued{PolicyName: strings.TrimPrefix(it.Key, QueuePrefix), SHA: sha}
			switch {
			case !ok:
			case leave == nil || !leave(q):
				out = append(out, policy.Queued{PolicyName: s.Copy(q.PolicyName), SHA: s.Copy(q.SHA)})
			case len(out) > 0 && out[len(out)-1].PolicyName == q.PolicyName:
				// left out, it is the name's last listing: an earlier one
				// (listed just before, in key order) goes too
				out = out[:len(out)-1]
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("registry: read queue: %w", err)
	}
	// A backend lists in key order; a repeated name keeps its last listing,
	// as a map by name did.
	slices.SortStableFunc(out, func(a, b policy.Queued) int { return strings.Compare(a.PolicyName, b.PolicyName) })
	kept := out[:0]
	for i, q := range out {
		if i+1 == len(out) || out[i+1].PolicyName != q.PolicyName {
			kept = append(kept, q)
		}
	}
	return slices.Clip(kept), nil
}

// queuedSHA is the sha a listed queue entry announces: from its metadata,
// else from its value ("" when that does not decode); ok is false when the
// entry is gone since it was listed.
func (r *Registry) queuedSHA(ctx context.Context, it Item) (sha string, ok bool, err error) {
	var md queueMetadata
	if it.Value == nil && len(it.Metadata) > 0 && json.Unmarshal(it.Metadata, &md) == nil && md.SHA != "" {
		return md.SHA, true, nil
	}
	if it, ok, err = r.fill(ctx, it); err != nil || !ok {
		return "", false, err
	}
	var q policy.QueueEntry
	_ = decodeObject(it.Value, &q)
	return q.SHA, true, nil
}
