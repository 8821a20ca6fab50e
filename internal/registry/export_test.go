package registry

import (
	"context"
	"time"

	bolt "go.etcd.io/bbolt"
)

// StoreOf is the store under r, for tests that write what the Registry
// would not (garbage, hand-written keys).
func StoreOf(r *Registry) Store { return r.store }

// OpenBoltTimeout opens with a short lock timeout, so the "in use" test is fast.
func OpenBoltTimeout(path string, now func() time.Time, timeout time.Duration) (*Bolt, error) {
	return openBolt(path, now, timeout)
}

// RawKeys returns every key stored in the file, expired or not.
func (b *Bolt) RawKeys() ([]string, error) {
	var keys []string
	err := b.view(context.Background(), func(bk *bolt.Bucket) error {
		return bk.ForEach(func(k, _ []byte) error {
			keys = append(keys, string(k))
			return nil
		})
	})
	return keys, err
}

// PutRaw stores raw bytes under key, bypassing the envelope.
func (b *Bolt) PutRaw(key string, raw []byte) error {
	return b.update(context.Background(), func(bk *bolt.Bucket) error {
		return bk.Put([]byte(key), raw)
	})
}
