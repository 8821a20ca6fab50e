package registrytest

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/knue/syncjob/internal/registry"
)

// Method names a Store method, for Faulty's call counts and faults.
type Method string

// The Store methods Faulty can count and fail.
const (
	Get    Method = "Get"
	List   Method = "List"
	Put    Method = "Put"
	Delete Method = "Delete"
)

// Call is one call made through a Faulty, in the order they were made.
type Call struct {
	Method Method
	Keys   []string // Get: the key; Put, Delete: the batch's keys in order
	Prefix string   // List
}

// Faulty wraps a Store and fails what it is told to, deterministically:
// chosen keys of Put and Delete, every Get or List, or the nth call of a
// method. It records every call. Safe for concurrent use; the nth call is
// counted in the order calls reach Faulty.
type Faulty struct {
	inner registry.Store

	mu           sync.Mutex
	keys         map[string]error
	getErr       error
	listErr      error
	nth          map[Method]map[int]error
	calls        []Call
	counts       map[Method]int
	injected     int64
	keysInjected int64
	listKeysOnly bool
	killing      bool
	killAt       int // Put+Delete calls after which every call fails
}

var _ registry.Store = (*Faulty)(nil)

// NewFaulty wraps inner, failing nothing until told to.
func NewFaulty(inner registry.Store) *Faulty {
	return &Faulty{inner: inner, nth: make(map[Method]map[int]error), counts: make(map[Method]int)}
}

// FailKeys makes Put and Delete fail each key of errs with its error (the key
// is not written; the rest of its batch is). It replaces the keys set
// before; nil clears them.
func (f *Faulty) FailKeys(errs map[string]error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys = make(map[string]error, len(errs))
	for k, err := range errs {
		f.keys[k] = err
	}
}

// FailGet makes every Get fail with err; nil clears.
func (f *Faulty) FailGet(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.getErr = err
}

// FailList makes every List fail with err; nil clears.
func (f *Faulty) FailList(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listErr = err
}

// FailCall makes the nth call of m (1-based, counting every call of m since
// NewFaulty) fail as a whole with err: a Put or Delete then fails every key
// of its batch.
func (f *Faulty) FailCall(m Method, n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.nth[m] == nil {
		f.nth[m] = make(map[int]error)
	}
	f.nth[m][n] = err
}

// ListKeysOnly makes List return items without values (nil Value), as
// Cloudflare lists, so callers must Get each value.
func (f *Faulty) ListKeysOnly(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listKeysOnly = on
}

// ErrKilled fails every call after Kill: the process is gone.
var ErrKilled = errors.New("process killed")

// Kill makes every call fail with ErrKilled once writes more Put or Delete
// calls have been made (0: from now on): a process killed at that point of
// a run, so nothing after it lands. Revive undoes it.
func (f *Faulty) Kill(writes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.killAt = f.counts[Put] + f.counts[Delete] + writes
	f.killing = true
}

// Revive ends a Kill: the next process starts.
func (f *Faulty) Revive() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.killing = false
}

// Calls returns how many times m was called, failed calls included.
func (f *Faulty) Calls(m Method) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[m]
}

// Injected counts the failures a Faulty injected since NewFaulty.
type Injected struct {
	Calls int64 // calls failed as a whole (FailGet, FailList, FailCall)
	Keys  int64 // keys of Put and Delete failed one by one (FailKeys)
}

// Injected returns the failures injected so far.
func (f *Faulty) Injected() Injected {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Injected{Calls: f.injected, Keys: f.keysInjected}
}

// Log returns every call made so far, in order.
func (f *Faulty) Log() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Call, len(f.calls))
	for i, c := range f.calls {
		c.Keys = append([]string(nil), c.Keys...)
		out[i] = c
	}
	return out
}

// begin records a call and returns the error failing it as a whole, if any.
func (f *Faulty) begin(c Call, always error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	f.counts[c.Method]++
	if f.killing && f.counts[Put]+f.counts[Delete] > f.killAt-boolInt(c.Method != Put && c.Method != Delete) {
		f.injected++
		return ErrKilled
	}
	err := f.nth[c.Method][f.counts[c.Method]]
	if err == nil {
		err = always
	}
	if err != nil {
		f.injected++
	}
	return err
}

// Get implements registry.Store.
func (f *Faulty) Get(ctx context.Context, key string) ([]byte, error) {
	f.mu.Lock()
	always := f.getErr
	f.mu.Unlock()
	if err := f.begin(Call{Method: Get, Keys: []string{key}}, always); err != nil {
		return nil, fmt.Errorf("faulty: get %q: %w", key, err)
	}
	return f.inner.Get(ctx, key)
}

// List implements registry.Store.
func (f *Faulty) List(ctx context.Context, prefix string) ([]registry.Item, error) {
	f.mu.Lock()
	always, keysOnly := f.listErr, f.listKeysOnly
	f.mu.Unlock()
	if err := f.begin(Call{Method: List, Prefix: prefix}, always); err != nil {
		return nil, fmt.Errorf("faulty: list %q: %w", prefix, err)
	}
	items, err := f.inner.List(ctx, prefix)
	if keysOnly {
		for i := range items {
			items[i].Value = nil
		}
	}
	return items, err
}

// Put implements registry.Store.
func (f *Faulty) Put(ctx context.Context, pairs []registry.Pair) map[string]error {
	keys := registry.PairKeys(pairs)
	if err := f.begin(Call{Method: Put, Keys: keys}, nil); err != nil {
		return registry.FailAll(nil, keys, fmt.Errorf("faulty: put: %w", err))
	}
	var (
		pass    []registry.Pair
		outcome map[string]error
	)
	f.mu.Lock()
	for _, p := range pairs {
		if err, ok := f.keys[p.Key]; ok {
			f.keysInjected++
			outcome = registry.FailAll(outcome, []string{p.Key}, fmt.Errorf("faulty: put: %w", err)) // the key is the map's: errors name it once
			continue
		}
		pass = append(pass, p)
	}
	f.mu.Unlock()
	return merge(outcome, f.inner.Put(ctx, pass))
}

// Delete implements registry.Store.
func (f *Faulty) Delete(ctx context.Context, keys []string) map[string]error {
	if err := f.begin(Call{Method: Delete, Keys: append([]string(nil), keys...)}, nil); err != nil {
		return registry.FailAll(nil, keys, fmt.Errorf("faulty: delete: %w", err))
	}
	var (
		pass    []string
		outcome map[string]error
	)
	f.mu.Lock()
	for _, k := range keys {
		if err, ok := f.keys[k]; ok {
			f.keysInjected++
			outcome = registry.FailAll(outcome, []string{k}, fmt.Errorf("faulty: delete: %w", err))
			continue
		}
		pass = append(pass, k)
	}
	f.mu.Unlock()
	return merge(outcome, f.inner.Delete(ctx, pass))
}

// Usage implements registry.Store: the inner store's usage, with one more
// request for each call Faulty failed as a whole (a failed request is a
// request).
func (f *Faulty) Usage() registry.Usage {
	f.mu.Lock()
	injected := f.injected
	f.mu.Unlock()
	u := f.inner.Usage()
	u.Requests += injected
	return u
}

// Close implements registry.Store.
func (f *Faulty) Close() error { return f.inner.Close() }

// EventuallyConsistent says what the inner store says
// (registry.Registry.EventuallyConsistent): faults on a lagging store lag.
func (f *Faulty) EventuallyConsistent() bool {
	ec, ok := f.inner.(interface{ EventuallyConsistent() bool })
	return ok && ec.EventuallyConsistent()
}

func merge(a, b map[string]error) map[string]error {
	if a == nil {
		return b
	}
	for k, err := range b {
		a[k] = err
	}
	return a
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
