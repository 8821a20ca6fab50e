package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/knue/syncjob/internal/policy"
)

// Pair is one key to write. Metadata is optional JSON (at most
// policy.MaxMetadataBytes). TTL 0 means no expiry; otherwise it is at least
// policy.MinTTLSeconds.
type Pair struct {
	Key      string
	Value    []byte
	Metadata json.RawMessage
	TTL      time.Duration
}

// Item is one listed key. Value may be nil when the backend lists keys
// without their values (Cloudflare); memory and bolt fill it. Expiration is
// zero for a key that does not expire.
type Item struct {
	Key        string
	Value      []byte
	Metadata   json.RawMessage
	Expiration time.Time
}

// Store is a key-value namespace with Cloudflare Workers KV's semantics: no
// transactions across keys, no compare-and-swap, bulk writes whose keys may
// fail one by one, listing by prefix, expiry by TTL. Keys are compared as
// bytes: a name in NFD and its NFC form are two keys.
type Store interface {
	// Get returns the value of key. It returns an error wrapping
	// policy.ErrNotFound when the key is absent or expired, and one wrapping
	// policy.ErrTooLarge when the key itself breaks a limit.
	Get(ctx context.Context, key string) ([]byte, error)

	// List returns every live key that starts with prefix, sorted bytewise by
	// key. Value may be nil (see Item); callers Get such keys. A listed
	// empty value is a non-nil empty slice.
	List(ctx context.Context, prefix string) ([]Item, error)

	// Put writes the pairs as one batch. It returns nil when every pair
	// landed, else a map from each failed key to its error (a failure of the
	// whole batch fails every key). A pair breaking a limit fails alone, with
	// an error wrapping policy.ErrTooLarge, before anything is written; so
	// does a key that appears twice in the batch (ErrDuplicateKey). Batches
	// of any size are accepted: a backend splits them as its API requires
	// (Cloudflare: 10,000 pairs and 100 MB per request).
	Put(ctx context.Context, pairs []Pair) map[string]error

	// Delete removes exactly the keys given, never by prefix, with Put's
	// outcome contract. Deleting an absent key succeeds.
	Delete(ctx context.Context, keys []string) map[string]error

	// Usage reports what the backend has cost so far: its requests and, on
	// a backend that bills per write (Cloudflare), the billable writes and
	// deletes. For memory and bolt a request is one Get, List, Put or
	// Delete that reached the backend; a call refused before (a bad key,
	// nothing valid to write, a cancelled context) makes none. Cloudflare
	// counts HTTP requests, retries included.
	Usage() Usage

	// Close releases the backend. Closing twice is harmless; any other call
	// after Close fails with ErrClosed.
	Close() error
}

// Usage is what a Store has cost since it was opened.
type Usage struct {
	// API names the backend in request counts: "registry" for the embedded
	// stores, "cloudflare" for Workers KV.
	API      string
	Requests int64
	// Billing is true when the backend bills per write; Writes and Deletes
	// are then what it billed (each pair of a bulk write, each key of a
	// bulk delete), else zero.
	Billing         bool
	Writes, Deletes int64
}

// APIRegistry is the API name of the embedded stores.
const APIRegistry = "registry"

var (
	// ErrClosed is returned by a Store used after Close.
	ErrClosed = errors.New("registry: store closed")
	// ErrDuplicateKey fails a key that appears more than once in one Put:
	// which of its values should win is a bug of the caller, not a choice.
	ErrDuplicateKey = errors.New("key appears more than once in one batch")
)

// CheckKey returns an error wrapping policy.ErrTooLarge when key cannot be a
// key: empty, "." or "..", longer than policy.MaxKeyBytes, or not valid UTF-8
// (Cloudflare's bulk API carries keys in JSON, which would silently replace
// invalid bytes and so write another key).
func CheckKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("registry: empty key: %w", policy.ErrTooLarge)
	case key == "." || key == "..":
		return fmt.Errorf("registry: key %q is not allowed: %w", key, policy.ErrTooLarge)
	case len(key) > policy.MaxKeyBytes:
		return fmt.Errorf("registry: key of %d bytes (max %d): %w", len(key), policy.MaxKeyBytes, policy.ErrTooLarge)
	case !utf8.ValidString(key):
		return fmt.Errorf("registry: key %q is not valid UTF-8: %w", key, policy.ErrTooLarge)
	}
	return nil
}

// CheckPair returns an error wrapping policy.ErrTooLarge when p breaks one
// of Cloudflare's limits, which every backend enforces: the key (CheckKey),
// a value over policy.MaxValueBytes, metadata over policy.MaxMetadataBytes or
// not valid JSON, a TTL that is negative or under policy.MinTTLSeconds.
func CheckPair(p Pair) error {
	if err := CheckKey(p.Key); err != nil {
		return err
	}
	if len(p.Value) > policy.MaxValueBytes {
		return fmt.Errorf("registry: value of %s is %d bytes (max %d): %w", p.Key, len(p.Value), policy.MaxValueBytes, policy.ErrTooLarge)
	}
	if len(p.Metadata) > policy.MaxMetadataBytes {
		return fmt.Errorf("registry: metadata of %s is %d bytes (max %d): %w", p.Key, len(p.Metadata), policy.MaxMetadataBytes, policy.ErrTooLarge)
	}
	if len(p.Metadata) > 0 && !json.Valid(p.Metadata) {
		return fmt.Errorf("registry: metadata of %s is not valid JSON: %w", p.Key, policy.ErrTooLarge)
	}
	if p.TTL < 0 || (p.TTL > 0 && p.TTL < policy.MinTTLSeconds*time.Second) {
		return fmt.Errorf("registry: ttl of %s is %s (0 or at least %ds): %w", p.Key, p.TTL, policy.MinTTLSeconds, policy.ErrTooLarge)
	}
	return nil
}

// ValidatePairs splits a batch for a backend's Put: the pairs to write, in
// order, and the keys that fail before any write (CheckPair, ErrDuplicateKey)
// with their errors; failed is nil when there are none.
func ValidatePairs(pairs []Pair) (valid []Pair, failed map[string]error) {
	idx, failed := ValidateEach(PairKeys(pairs), func(i int) error { return CheckPair(pairs[i]) })
	valid = make([]Pair, len(idx))
	for j, i := range idx {
		valid[j] = pairs[i]
	}
	return valid, failed
}

// ValidateEach is ValidatePairs for a put whose pairs are made one at a
// time: keys[i] is the ith pair's key, check(i) its CheckPair, called in
// order for each key that is not put twice. It returns the indexes of the
// valid pairs and the failures of the others.
func ValidateEach(keys []string, check func(i int) error) (valid []int, failed map[string]error) {
	seen := make(map[string]int, len(keys))
	for _, k := range keys {
		seen[k]++
	}
	valid = make([]int, 0, len(keys))
	for i, k := range keys {
		var err error
		if n := seen[k]; n > 1 {
			err = fmt.Errorf("registry: put %q: %d times: %w", k, n, ErrDuplicateKey)
		} else {
			err = check(i)
		}
		if err != nil {
			if failed == nil {
				failed = make(map[string]error)
			}
			failed[k] = err
			continue
		}
		valid = append(valid, i)
	}
	return valid, failed
}

// ValidateKeys splits a Delete the same way: the distinct valid keys, in
// first-seen order, and the keys that fail CheckKey.
func ValidateKeys(keys []string) (valid []string, failed map[string]error) {
	seen := make(map[string]bool, len(keys))
	valid = make([]string, 0, len(keys))
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		if err := CheckKey(k); err != nil {
			if failed == nil {
				failed = make(map[string]error)
			}
			failed[k] = err
			continue
		}
		valid = append(valid, k)
	}
	return valid, failed
}

// FailAll records err for every key into outcome (allocating it when nil)
// and returns it: the outcome of a batch that failed as a whole.
func FailAll(outcome map[string]error, keys []string, err error) map[string]error {
	if len(keys) == 0 {
		return outcome
	}
	if outcome == nil {
		outcome = make(map[string]error, len(keys))
	}
	for _, k := range keys {
		outcome[k] = err
	}
	return outcome
}

// PairKeys returns the keys of pairs, in order.
func PairKeys(pairs []Pair) []string {
	keys := make([]string, len(pairs))
	for i, p := range pairs {
		keys[i] = p.Key
	}
	return keys
}

// expiration returns when a key written at now with ttl expires; zero for
// ttl 0.
func expiration(now time.Time, ttl time.Duration) time.Time {
	if ttl == 0 {
		return time.Time{}
	}
	return now.Add(ttl).UTC()
}

// expired reports whether a key with expiration exp is gone at now.
func expired(exp, now time.Time) bool {
	return !exp.IsZero() && !now.Before(exp)
}

// clone copies b, keeping nil as nil.
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}
