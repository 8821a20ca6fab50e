package registry

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/knue/syncjob/internal/policy"
)

// Bolt is a Store in one bbolt file: the embedded registry of a local run.
// The file is single-process: bbolt holds an exclusive lock while it is open.
type Bolt struct {
	db       *bolt.DB
	path     string
	now      func() time.Time
	requests atomic.Int64
	closed   atomic.Bool
}

var _ Store = (*Bolt)(nil)

var bucketName = []byte("registry")

// lockTimeout is how long OpenBolt waits for another process to let go of
// the file: long enough for a run that is just closing, short enough to fail
// fast when a run is in progress.
const lockTimeout = time.Second

// OpenBolt opens the registry file at path, creating the file (not its
// directory) when missing. now (time.Now when nil) decides which keys have
// expired. A file held by another process fails after about a second with
// an error saying so.
func OpenBolt(path string, now func() time.Time) (*Bolt, error) {
	return openBolt(path, now, lockTimeout)
}

func openBolt(path string, now func() time.Time, timeout time.Duration) (*Bolt, error) {
	if now == nil {
		now = time.Now
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("bolt: open registry file %s: directory %s does not exist: %w", path, dir, err)
		}
		return nil, fmt.Errorf("bolt: open registry file %s: %w", path, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("bolt: open registry file %s: %s is not a directory", path, dir)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, fmt.Errorf("bolt: registry file %s is in use by another process (waited %s): %w", path, timeout, err)
		}
		return nil, fmt.Errorf("bolt: open registry file %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketName)
		return err
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("bolt: open registry file %s: create bucket: %w", path, err)
	}
	return &Bolt{db: db, path: path, now: now}, nil
}

// Path returns the file the store was opened on.
func (b *Bolt) Path() string { return b.path }

// Get implements Store.
func (b *Bolt) Get(ctx context.Context, key string) ([]byte, error) {
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	if err := b.ready(ctx); err != nil {
		return nil, fmt.Errorf("bolt: get %q: %w", key, err)
	}
	b.requests.Add(1)
	var value []byte
	err := b.db.View(func(tx *bolt.Tx) error {
		raw := tx.Bucket(bucketName).Get([]byte(key))
		if raw == nil {
			return policy.ErrNotFound
		}
		env, err := decodeEnvelope(raw)
		if err != nil {
			return err
		}
		if expired(env.exp, b.now()) {
			return policy.ErrNotFound
		}
		value = clone(env.value)
		if value == nil {
			value = []byte{}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bolt: get %q: %w", key, err)
	}
	return value, nil
}

// List implements Store.
func (b *Bolt) List(ctx context.Context, prefix string) ([]Item, error) {
	if err := b.ready(ctx); err != nil {
		return nil, fmt.Errorf("bolt: list %q: %w", prefix, err)
	}
	b.requests.Add(1)
	var items []Item
	err := b.db.View(func(tx *bolt.Tx) error {
		now := b.now()
		p := []byte(prefix)
		c := tx.Bucket(bucketName).Cursor()
		for k, raw := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, raw = c.Next() {
			env, err := decodeEnvelope(raw)
			if err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
			if expired(env.exp, now) {
				continue
			}
			items = append(items, Item{
				Key:        string(k),
				Value:      append([]byte{}, env.value...),
				Metadata:   clone(env.metadata),
				Expiration: env.exp,
			})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bolt: list %q: %w", prefix, err)
	}
	return items, nil
}

// Put implements Store. The batch is one transaction, which also purges the
// keys that have expired.
func (b *Bolt) Put(ctx context.Context, pairs []Pair) map[string]error {
	valid, outcome := ValidatePairs(pairs)
	if len(valid) == 0 {
		return outcome
	}
	if err := b.ready(ctx); err != nil {
		return FailAll(outcome, PairKeys(valid), fmt.Errorf("bolt: put: %w", err))
	}
	b.requests.Add(1)
	err := b.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketName)
		now := b.now()
		if err := purgeExpired(bk, now); err != nil {
			return err
		}
		for _, p := range valid {
			env := envelope{value: p.Value, metadata: p.Metadata, exp: expiration(now, p.TTL)}
			if err := bk.Put([]byte(p.Key), env.encode()); err != nil {
				return fmt.Errorf("key %q: %w", p.Key, err)
			}
		}
		return nil
	})
	if err != nil {
		return FailAll(outcome, PairKeys(valid), fmt.Errorf("bolt: put: %w", err))
	}
	return outcome
}

// Delete implements Store. The batch is one transaction, which also purges
// the keys that have expired.
func (b *Bolt) Delete(ctx context.Context, keys []string) map[string]error {
	valid, outcome := ValidateKeys(keys)
	if len(valid) == 0 {
		return outcome
	}
	if err := b.ready(ctx); err != nil {
		return FailAll(outcome, valid, fmt.Errorf("bolt: delete: %w", err))
	}
	b.requests.Add(1)
	err := b.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketName)
		if err := purgeExpired(bk, b.now()); err != nil {
			return err
		}
		for _, k := range valid {
			if err := bk.Delete([]byte(k)); err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
		}
		return nil
	})
	if err != nil {
		return FailAll(outcome, valid, fmt.Errorf("bolt: delete: %w", err))
	}
	return outcome
}

// Usage implements Store.
func (b *Bolt) Usage() Usage { return Usage{API: APIRegistry, Requests: b.requests.Load()} }

// Close implements Store.
func (b *Bolt) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	if err := b.db.Close(); err != nil {
		return fmt.Errorf("bolt: close %s: %w", b.path, err)
	}
	return nil
}

func (b *Bolt) ready(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.closed.Load() {
		return ErrClosed
	}
	return nil
}

// purgeExpired deletes the keys of bk that have expired at now. Unreadable
// envelopes are left alone: reads report them.
func purgeExpired(bk *bolt.Bucket, now time.Time) error {
	var gone [][]byte
	err := bk.ForEach(func(k, raw []byte) error {
		if exp, err := envelopeExpiration(raw); err == nil && expired(exp, now) {
			gone = append(gone, append([]byte{}, k...))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range gone {
		if err := bk.Delete(k); err != nil {
			return fmt.Errorf("purge %q: %w", k, err)
		}
	}
	return nil
}

// envelope is how bolt stores one key: a small binary header, then the
// metadata and the value, so a 25 MiB value is not re-encoded.
//
//	byte 0      format version (1)
//	bytes 1-8   expiration, Unix nanoseconds big-endian; 0 when none
//	bytes 9-10  metadata length, big-endian
//	then        metadata, value
type envelope struct {
	value    []byte
	metadata []byte
	exp      time.Time
}

const (
	envelopeV1     = 1
	envelopeHeader = 11
)

var errBadEnvelope = errors.New("unreadable stored value")

func (e envelope) encode() []byte {
	buf := make([]byte, envelopeHeader, envelopeHeader+len(e.metadata)+len(e.value))
	buf[0] = envelopeV1
	if !e.exp.IsZero() {
		binary.BigEndian.PutUint64(buf[1:9], uint64(e.exp.UnixNano()))
	}
	binary.BigEndian.PutUint16(buf[9:11], uint16(len(e.metadata)))
	buf = append(buf, e.metadata...)
	return append(buf, e.value...)
}

func envelopeExpiration(raw []byte) (time.Time, error) {
	if len(raw) < envelopeHeader || raw[0] != envelopeV1 {
		return time.Time{}, errBadEnvelope
	}
	n := binary.BigEndian.Uint64(raw[1:9])
	if n == 0 {
		return time.Time{}, nil
	}
	return time.Unix(0, int64(n)).UTC(), nil
}

// decodeEnvelope reads raw without copying: the slices alias raw.
func decodeEnvelope(raw []byte) (envelope, error) {
	exp, err := envelopeExpiration(raw)
	if err != nil {
		return envelope{}, err
	}
	mlen := int(binary.BigEndian.Uint16(raw[9:11]))
	if len(raw) < envelopeHeader+mlen {
		return envelope{}, errBadEnvelope
	}
	env := envelope{exp: exp, value: raw[envelopeHeader+mlen:]}
	if mlen > 0 {
		env.metadata = raw[envelopeHeader : envelopeHeader+mlen]
	}
	return env, nil
}
