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
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/knue/syncjob/internal/policy"
)

// Bolt is a Store in one bbolt file: the embedded registry of a local run.
//
// One process writes it at a time, and readers work while it does. bbolt
// locks the whole file for as long as it is open (a writer exclusively, a
// reader shared), so Bolt opens the file only for the length of each
// operation, and a writer keeps the single-writer guarantee with a lock
// file of its own beside it, <path>.lock, which names the holder (pid, host,
// since when). A reader (OpenBoltReadOnly) takes no lock file, creates
// nothing and writes nothing: it works on a read-only file and beside a run.
type Bolt struct {
	path     string
	now      func() time.Time
	readOnly bool
	lock     *writerLock // nil when read-only
	requests atomic.Int64
	closed   atomic.Bool

	// db is the open file, shared by the operations in flight; the last
	// one to finish closes it, letting another process's operation in.
	mu      sync.Mutex
	db      *bolt.DB
	file    *os.File // db's descriptor, closed at once if db is abandoned
	users   int
	corrupt *CorruptError // the damage an operation met: later ones fail with it
}

var _ Store = (*Bolt)(nil)

var bucketName = []byte("registry")

// ErrInUse is matched by the *InUseError of a registry file another writer holds.
var ErrInUse = errors.New("registry file in use")

// ErrReadOnly is the error of every write to a Bolt opened read-only.
var ErrReadOnly = errors.New("registry file opened read-only")

// BoltWriter is the writer that holds a registry file: what its lock file says.
type BoltWriter struct {
	PID   int    `json:"pid"`
	Host  string `json:"host"`
	Since string `json:"since"`
}

func (w BoltWriter) String() string {
	return fmt.Sprintf("pid %d on %s since %s", w.PID, w.Host, w.Since)
}

// InUseError says that another writer holds the registry file, and who.
type InUseError struct {
	Path   string
	Holder *BoltWriter // nil when the lock file could not be read
	Waited time.Duration
}

func (e *InUseError) Error() string {
	who := "another process"
	if e.Holder != nil {
		who += " (" + e.Holder.String() + ")"
	}
	return fmt.Sprintf("bolt: registry file %s is in use by %s; waited %s", e.Path, who, e.Waited)
}

// Is makes errors.Is(err, ErrInUse) true.
func (e *InUseError) Is(target error) bool { return target == ErrInUse }

const (
	// lockTimeout is how long OpenBolt waits for another writer to let go:
	// long enough for a run that is just closing, short enough to fail fast
	// when a run is in progress.
	lockTimeout = time.Second
	// opTimeout is how long one operation waits for another process's
	// operation on the file (a write transaction, a reader's listing).
	opTimeout = 10 * time.Second
)

// OpenBolt opens the registry file at path for writing, creating the file
// (not its directory) when missing. now (time.Now when nil) decides which
// keys have expired. Holding the writer's lock proves that no run that took
// the lease lives: a lease left holding is ended at once (see
// breakLeftLease). While another writer holds the file it fails after
// about a second with an *InUseError naming the holder.
func OpenBolt(path string, now func() time.Time) (*Bolt, error) {
	return openBolt(path, now, lockTimeout)
}

// OpenBoltReadOnly opens an existing registry file for reading: it takes no
// writer lock, so it works while a writer has the file, and it creates and
// writes nothing (every write fails with ErrReadOnly). A missing file is an
// error wrapping fs.ErrNotExist.
func OpenBoltReadOnly(path string, now func() time.Time) (*Bolt, error) {
	if now == nil {
		now = time.Now
	}
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("bolt: registry file %s does not exist: %w", path, err)
		}
		return nil, fmt.Errorf("bolt: open registry file %s: %w", path, err)
	}
	b := &Bolt{path: path, now: now, readOnly: true}
	if err := b.use(context.Background(), func(*bolt.DB) error { return nil }); err != nil {
		return nil, err
	}
	return b, nil
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
	lock, err := lockWriter(path, BoltWriter{PID: os.Getpid(), Host: hostname(), Since: now().UTC().Format(time.RFC3339)}, timeout)
	if err != nil {
		return nil, err
	}
	b := &Bolt{path: path, now: now, lock: lock}
	err = b.use(context.Background(), func(db *bolt.DB) error {
		return db.Update(func(tx *bolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists(bucketName)
			if err != nil {
				return err
			}
			return breakLeftLease(bk, now())
		})
	})
	if err != nil {
		_ = lock.release()
		return nil, err
	}
	return b, nil
}

// BoltHolder returns the writer holding the registry file at path, or nil
// when none does. It changes nothing.
func BoltHolder(path string) (*BoltWriter, error) {
	return lockHolder(path)
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown host"
	}
	return h
}

// use runs fn on the open file, opening it first when no other operation
// of this Bolt has it open. A damaged file is a *CorruptError, never a
// panic; once one is seen, every later operation fails with it.
func (b *Bolt) use(ctx context.Context, fn func(db *bolt.DB) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	if b.corrupt != nil {
		b.mu.Unlock()
		return b.corrupt
	}
	if b.db == nil {
		db, file, err := b.openDB()
		if err != nil {
			b.noteCorrupt(err)
			b.mu.Unlock()
			return err
		}
		b.db, b.file = db, file
	}
	b.users++
	db, file := b.db, b.file
	b.mu.Unlock()

	err := b.guarded(func() error { return fn(db) })

	b.mu.Lock()
	defer b.mu.Unlock()
	broken := b.noteCorrupt(err)
	if b.users--; b.users == 0 {
		b.db, b.file = nil, nil
		if broken {
			b.abandon(db, file)
		} else if cerr := db.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("bolt: close %s: %w", b.path, cerr)
		}
	}
	return err
}

// noteCorrupt remembers a *CorruptError (b.mu held) and reports whether err
// is one.
func (b *Bolt) noteCorrupt(err error) bool {
	var corrupt *CorruptError
	if !errors.As(err, &corrupt) {
		return false
	}
	if b.corrupt == nil {
		b.corrupt = corrupt
	}
	return true
}

// view runs fn in a read transaction; a file without the bucket (never
// written) reads as empty, bk nil.
func (b *Bolt) view(ctx context.Context, fn func(bk *bolt.Bucket) error) error {
	return b.use(ctx, func(db *bolt.DB) error {
		return db.View(func(tx *bolt.Tx) error { return fn(tx.Bucket(bucketName)) })
	})
}

// update runs fn in a write transaction.
func (b *Bolt) update(ctx context.Context, fn func(bk *bolt.Bucket) error) error {
	if b.readOnly {
		return ErrReadOnly
	}
	return b.use(ctx, func(db *bolt.DB) error {
		return db.Update(func(tx *bolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists(bucketName)
			if err != nil {
				return err
			}
			return fn(bk)
		})
	})
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
	err := b.view(ctx, func(bk *bolt.Bucket) error {
		var raw []byte
		if bk != nil {
			raw = bk.Get([]byte(key))
		}
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

// unreadableItem is the item of a key whose stored record is damaged: its
// bytes as they are, which no reader decodes, so that the key is what is
// unreadable (a policy, a queue entry: registry.DecodeError, which a full
// run writes again from the head), not the whole listing. One damaged
// record failed every full sync and every listing, naming neither the way
// out nor, for the state's keys, the key (an adversarial helper).
func unreadableItem(k, raw []byte) Item {
	return Item{Key: string(k), Value: append([]byte{}, raw...)}
}

// List implements Store.
func (b *Bolt) List(ctx context.Context, prefix string) ([]Item, error) {
	if err := b.ready(ctx); err != nil {
		return nil, fmt.Errorf("bolt: list %q: %w", prefix, err)
	}
	b.requests.Add(1)
	var items []Item
	err := b.view(ctx, func(bk *bolt.Bucket) error {
		if bk == nil {
			return nil
		}
		now := b.now()
		p := []byte(prefix)
		c := bk.Cursor()
		for k, raw := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, raw = c.Next() {
			env, err := decodeEnvelope(raw)
			if err != nil {
				items = append(items, unreadableItem(k, raw))
				continue
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
	err := b.update(ctx, func(bk *bolt.Bucket) error {
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
	err := b.update(ctx, func(bk *bolt.Bucket) error {
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

// Close implements Store. A writer lets go of the file for the next one.
func (b *Bolt) Close() error {
	if b.closed.Swap(true) || b.lock == nil {
		return nil
	}
	if err := b.lock.release(); err != nil {
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
