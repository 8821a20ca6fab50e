package registry

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/knue/syncjob/internal/policy"
)

// Memory is a Store in memory, for tests. It honours TTLs with the clock it
// was given and is safe for concurrent use.
type Memory struct {
	now      func() time.Time
	requests atomic.Int64

	mu     sync.Mutex
	closed bool
	data   map[string]memEntry
}

type memEntry struct {
	value    []byte
	metadata []byte
	exp      time.Time
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty Memory store; now (time.Now when nil) decides
// which keys have expired.
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, data: make(map[string]memEntry)}
}

// Get implements Store.
func (m *Memory) Get(ctx context.Context, key string) ([]byte, error) {
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: get %q: %w", key, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("memory: get %q: %w", key, ErrClosed)
	}
	m.requests.Add(1)
	e, ok := m.data[key]
	if !ok || expired(e.exp, m.now()) {
		return nil, fmt.Errorf("memory: get %q: %w", key, policy.ErrNotFound)
	}
	return append([]byte{}, e.value...), nil
}

// List implements Store.
func (m *Memory) List(ctx context.Context, prefix string) ([]Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: list %q: %w", prefix, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("memory: list %q: %w", prefix, ErrClosed)
	}
	m.requests.Add(1)
	now := m.now()
	var items []Item
	for k, e := range m.data {
		if !strings.HasPrefix(k, prefix) || expired(e.exp, now) {
			continue
		}
		items = append(items, Item{Key: k, Value: append([]byte{}, e.value...), Metadata: clone(e.metadata), Expiration: e.exp})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Key < items[j].Key })
	return items, nil
}

// Put implements Store.
func (m *Memory) Put(ctx context.Context, pairs []Pair) map[string]error {
	valid, outcome := ValidatePairs(pairs)
	if len(valid) == 0 {
		return outcome
	}
	if err := ctx.Err(); err != nil {
		return FailAll(outcome, PairKeys(valid), fmt.Errorf("memory: put: %w", err))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return FailAll(outcome, PairKeys(valid), fmt.Errorf("memory: put: %w", ErrClosed))
	}
	m.requests.Add(1)
	now := m.now()
	m.purge(now)
	for _, p := range valid {
		m.data[p.Key] = memEntry{value: clone(p.Value), metadata: clone(p.Metadata), exp: expiration(now, p.TTL)}
	}
	return outcome
}

// Delete implements Store.
func (m *Memory) Delete(ctx context.Context, keys []string) map[string]error {
	valid, outcome := ValidateKeys(keys)
	if len(valid) == 0 {
		return outcome
	}
	if err := ctx.Err(); err != nil {
		return FailAll(outcome, valid, fmt.Errorf("memory: delete: %w", err))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return FailAll(outcome, valid, fmt.Errorf("memory: delete: %w", ErrClosed))
	}
	m.requests.Add(1)
	m.purge(m.now())
	for _, k := range valid {
		delete(m.data, k)
	}
	return outcome
}

// purge drops expired keys; m.mu is held.
func (m *Memory) purge(now time.Time) {
	for k, e := range m.data {
		if expired(e.exp, now) {
			delete(m.data, k)
		}
	}
}

// Usage implements Store.
func (m *Memory) Usage() Usage { return Usage{API: APIRegistry, Requests: m.requests.Load()} }

// Close implements Store.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.data = nil
	return nil
}
