package mirrortest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/knue/syncjob/internal/mirror"
)

// Memory is a mirror.Target in memory, for the tests of code that uses a
// target (the run): exact like the real ones, with per-key failures to
// inject. Safe for concurrent use.
type Memory struct {
	prefix string

	mu         sync.Mutex
	objects    map[string]mirror.Object
	failPut    map[string]error
	failDelete map[string]error
	stats      mirror.Stats
}

var _ mirror.Target = (*Memory)(nil)

// NewMemory returns an empty Memory under prefix.
func NewMemory(prefix string) *Memory {
	return &Memory{prefix: prefix, objects: map[string]mirror.Object{}, failPut: map[string]error{}, failDelete: map[string]error{}}
}

// FailPut makes every Put of key fail with err (nil clears it).
func (m *Memory) FailPut(key string, err error) { m.setFault(m.failPut, key, err) }

// FailDelete makes every Delete report err for key (nil clears it).
func (m *Memory) FailDelete(key string, err error) { m.setFault(m.failDelete, key, err) }

func (m *Memory) setFault(faults map[string]error, key string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err == nil {
		delete(faults, key)
		return
	}
	faults[key] = err
}

// Objects returns a copy of what the target holds, by key.
func (m *Memory) Objects() map[string]mirror.Object {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.objects)
}

// PutRaw stores body at key, whatever the key: a hand edit or a foreign
// object.
func (m *Memory) PutRaw(_ testing.TB, key string, body []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objects[key] = mirror.Object{Key: key, Body: slices.Clone(body)}
}

// DeleteRaw removes key, whatever the key: an operator's cleanup of an
// object no target may delete (mirror.Repairs.Unsafe).
func (m *Memory) DeleteRaw(_ testing.TB, key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objects, key)
}

// ReadRaw returns the body and metadata at key.
func (m *Memory) ReadRaw(_ testing.TB, key string) ([]byte, map[string]string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objects[key]
	return o.Body, o.Metadata, ok
}

// Name implements mirror.Target.
func (m *Memory) Name() string { return "memory, prefix " + m.prefix }

// Stats implements mirror.Target.
func (m *Memory) Stats() mirror.Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats
}

// Put implements mirror.Target.
func (m *Memory) Put(ctx context.Context, o mirror.Object) (string, error) {
	if err := mirror.ValidateKey(m.prefix, o.Key); err != nil {
		return "", fmt.Errorf("memory: put: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("memory: put %s: %w", o.Key, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stats.Puts++
	if err := m.failPut[o.Key]; err != nil {
		return "", fmt.Errorf("memory: put %s: %w", o.Key, err)
	}
	o.Body, o.Metadata = slices.Clone(o.Body), maps.Clone(o.Metadata)
	m.objects[o.Key] = o
	m.stats.BytesUploaded += int64(len(o.Body))
	return mirror.ETagOf(o.Body), nil
}

// Delete implements mirror.Target.
func (m *Memory) Delete(ctx context.Context, keys []string) (map[string]error, error) {
	for _, k := range keys {
		if err := mirror.ValidateKey(m.prefix, k); err != nil {
			return nil, fmt.Errorf("memory: delete: %w", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: delete: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	perKey := map[string]error{}
	for batch := range slices.Chunk(keys, mirror.MaxDeleteBatch) {
		m.stats.Deletes++
		for _, k := range batch {
			if err := m.failDelete[k]; err != nil {
				perKey[k] = fmt.Errorf("memory: delete %s: %w", k, err)
				continue
			}
			delete(m.objects, k)
		}
	}
	return perKey, nil
}

// List implements mirror.Target.
func (m *Memory) List(ctx context.Context) ([]mirror.Listed, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: list: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stats.Lists++
	var out []mirror.Listed
	for k, o := range m.objects {
		if strings.HasPrefix(k, m.prefix) {
			out = append(out, mirror.Listed{Key: k, ETag: mirror.ETagOf(o.Body), Size: int64(len(o.Body))})
		}
	}
	slices.SortFunc(out, func(a, b mirror.Listed) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}
