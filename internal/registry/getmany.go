package registry

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/knue/syncjob/internal/policy"
)

// ManyGetter is a Store that reads several keys in one request: Cloudflare's
// bulk get (up to 100 keys), one transaction of the embedded stores. Keys
// that are absent are absent from the map.
type ManyGetter interface {
	GetMany(ctx context.Context, keys []string) (map[string][]byte, error)
}

// getMany reads keys in one request when the store can, else one by one.
func (r *Registry) getMany(ctx context.Context, keys []string) (map[string][]byte, error) {
	if g, ok := r.store.(ManyGetter); ok {
		return g.GetMany(ctx, keys)
	}
	out := make(map[string][]byte, len(keys))
	for _, k := range keys {
		v, err := r.store.Get(ctx, k)
		switch {
		case errors.Is(err, policy.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			out[k] = v
		}
	}
	return out, nil
}

// SyncState is what a run reads before it decides anything: the last synced
// commit, the last run, and the lease. Values that do not decode are
// reported, not fatal.
type SyncState struct {
	LastCommit string             // "" when none was recorded
	LastRun    *policy.RunSummary // nil when none, or unreadable (LastRunErr)
	LastRunErr error
	Lease      *Lease // nil when none, or unreadable (LeaseErr)
	LeaseErr   error
}

// SyncState reads lastCommit, lastRun and the lease in one request where the
// backend allows (see ManyGetter).
func (r *Registry) SyncState(ctx context.Context) (SyncState, error) {
	got, err := r.getMany(ctx, []string{LastCommitKey, LastRunKey, LeaseKey})
	if err != nil {
		return SyncState{}, fmt.Errorf("registry: read sync state: %w", err)
	}
	var st SyncState
	if raw, ok := got[LastCommitKey]; ok {
		st.LastCommit = parseCommit(raw)
	}
	if raw, ok := got[LastRunKey]; ok {
		var s policy.RunSummary
		if err := decodeObject(raw, &s); err != nil {
			st.LastRunErr = fmt.Errorf("registry: decode %s: %w", LastRunKey, err)
		} else {
			st.LastRun = &s
		}
	}
	if raw, ok := got[LeaseKey]; ok {
		st.Lease, st.LeaseErr = decodeLease(raw)
	}
	return st, nil
}

// parseCommit reads a stored lastCommit: a raw string; surrounding space
// and JSON quotes are tolerated.
func parseCommit(raw []byte) string {
	s := strings.TrimSpace(string(raw))
	if len(s) >= 2 && s[0] == '"' {
		if u, err := strconv.Unquote(s); err == nil {
			s = u
		}
	}
	return s
}

// GetMany implements ManyGetter: one request.
func (m *Memory) GetMany(ctx context.Context, keys []string) (map[string][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: get many: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("memory: get many: %w", ErrClosed)
	}
	m.requests.Add(1)
	out := make(map[string][]byte, len(keys))
	for _, k := range keys {
		if e, ok := m.data[k]; ok && !expired(e.exp, m.now()) {
			out[k] = append([]byte{}, e.value...)
		}
	}
	return out, nil
}

// GetMany implements ManyGetter: one transaction.
func (b *Bolt) GetMany(ctx context.Context, keys []string) (map[string][]byte, error) {
	if err := b.ready(ctx); err != nil {
		return nil, fmt.Errorf("bolt: get many: %w", err)
	}
	b.requests.Add(1)
	out := make(map[string][]byte, len(keys))
	err := b.view(ctx, func(bk *bolt.Bucket) error {
		for _, k := range keys {
			var raw []byte
			if bk != nil {
				raw = bk.Get([]byte(k))
			}
			if raw == nil {
				continue
			}
			env, err := decodeEnvelope(raw)
			if err != nil {
				out[k] = unreadableItem([]byte(k), raw).Value
				continue
			}
			if !expired(env.exp, b.now()) {
				out[k] = append([]byte{}, env.value...)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bolt: get many: %w", err)
	}
	return out, nil
}
