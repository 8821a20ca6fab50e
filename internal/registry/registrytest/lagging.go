package registrytest

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// Lagging wraps a Store whose reads lag its writes, as Workers KV's may: a
// Get or List sees each key as it was Lag ago by the clock, so a write made
// less than Lag before a read is not yet visible to it (the value before
// it is, or nothing). Writes land at once in the inner store. Safe for
// concurrent use. Lag 0 reads the inner store as it is.
type Lagging struct {
	inner registry.Store
	now   func() time.Time

	mu   sync.Mutex
	lag  time.Duration
	hist map[string][]version // per key, oldest first
}

// version is one state of a key: its value from at on, or absent.
type version struct {
	at       time.Time
	value    []byte
	metadata []byte
	absent   bool
}

var _ registry.Store = (*Lagging)(nil)

// NewLagging wraps inner; reads lag writes by lag as now tells time.
func NewLagging(inner registry.Store, now func() time.Time, lag time.Duration) *Lagging {
	return &Lagging{inner: inner, now: now, lag: lag, hist: map[string][]version{}}
}

// SetLag changes how far reads lag writes from now on.
func (l *Lagging) SetLag(lag time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lag = lag
}

// visible returns the state of key a read sees now, and whether the key
// has a history at all (when not, the inner store is current).
func (l *Lagging) visible(key string) (version, bool) {
	h := l.hist[key]
	if len(h) == 0 {
		return version{}, false
	}
	cut := l.now().Add(-l.lag)
	v := h[0] // the state before the first write seen
	for _, x := range h[1:] {
		if x.at.After(cut) {
			break
		}
		v = x
	}
	return v, true
}

// remember records the state key had before its first write through l.
func (l *Lagging) remember(ctx context.Context, key string) {
	if _, ok := l.hist[key]; ok {
		return
	}
	before := version{absent: true}
	if items, err := l.inner.List(ctx, key); err == nil {
		for _, it := range items {
			if it.Key == key {
				before = version{value: it.Value, metadata: it.Metadata}
				if it.Value == nil {
					if v, err := l.inner.Get(ctx, key); err == nil {
						before.value = v
					}
				}
			}
		}
	}
	l.hist[key] = []version{before}
}

// Get implements registry.Store.
func (l *Lagging) Get(ctx context.Context, key string) ([]byte, error) {
	l.mu.Lock()
	v, ok := l.visible(key)
	l.mu.Unlock()
	if !ok {
		return l.inner.Get(ctx, key)
	}
	if err := registry.CheckKey(key); err != nil {
		return nil, err
	}
	if v.absent {
		return nil, policy.ErrNotFound
	}
	return slices.Clone(v.value), nil
}

// List implements registry.Store.
func (l *Lagging) List(ctx context.Context, prefix string) ([]registry.Item, error) {
	items, err := l.inner.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]registry.Item, 0, len(items))
	seen := map[string]bool{}
	for _, it := range items {
		seen[it.Key] = true
		v, ok := l.visible(it.Key)
		switch {
		case !ok:
			out = append(out, it)
		case !v.absent:
			out = append(out, registry.Item{Key: it.Key, Value: v.value, Metadata: v.metadata})
		}
	}
	for key := range l.hist {
		if seen[key] || !strings.HasPrefix(key, prefix) {
			continue
		}
		if v, _ := l.visible(key); !v.absent {
			out = append(out, registry.Item{Key: key, Value: v.value, Metadata: v.metadata})
		}
	}
	slices.SortFunc(out, func(a, b registry.Item) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// Put implements registry.Store.
func (l *Lagging) Put(ctx context.Context, pairs []registry.Pair) map[string]error {
	l.mu.Lock()
	for _, p := range pairs {
		l.remember(ctx, p.Key)
	}
	l.mu.Unlock()
	failed := l.inner.Put(ctx, pairs)
	l.mu.Lock()
	defer l.mu.Unlock()
	at := l.now()
	for _, p := range pairs {
		if _, bad := failed[p.Key]; !bad {
			l.hist[p.Key] = append(l.hist[p.Key], version{at: at, value: slices.Clone(p.Value), metadata: slices.Clone([]byte(p.Metadata))})
		}
	}
	return failed
}

// Delete implements registry.Store.
func (l *Lagging) Delete(ctx context.Context, keys []string) map[string]error {
	l.mu.Lock()
	for _, k := range keys {
		l.remember(ctx, k)
	}
	l.mu.Unlock()
	failed := l.inner.Delete(ctx, keys)
	l.mu.Lock()
	defer l.mu.Unlock()
	at := l.now()
	for _, k := range keys {
		if _, bad := failed[k]; !bad {
			l.hist[k] = append(l.hist[k], version{at: at, absent: true})
		}
	}
	return failed
}

// Usage implements registry.Store.
func (l *Lagging) Usage() registry.Usage { return l.inner.Usage() }

// Close implements registry.Store.
func (l *Lagging) Close() error { return l.inner.Close() }

// EventuallyConsistent says that reads of l may lag its writes (see
// registry.Registry.EventuallyConsistent).
func (l *Lagging) EventuallyConsistent() bool { return true }
