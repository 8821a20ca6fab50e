package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/knue/syncjob/internal/policy"
)

// Registry reads and writes the registry schema (docs/design.md "Registry
// schema") over a Store. It holds no state of its own: two Registry values
// over one Store see the same thing.
type Registry struct {
	store Store
}

// New returns a Registry over store.
func New(store Store) *Registry { return &Registry{store: store} }

// Usage reports what the backend has cost so far (see Store.Usage).
func (r *Registry) Usage() Usage { return r.store.Usage() }

// Close closes the store the Registry reads and writes.
func (r *Registry) Close() error { return r.store.Close() }

// policyMetadata is the metadata of a policy key. The sha lets a listing
// show versions without reading values (docs/design.md); path, title and
// lastUpdated make a listed key a complete Entry, so that reading the
// registry from Cloudflare costs one list request per 1,000 policies and no
// Get. They are pointers so that "absent" (metadata of a hand-written key,
// or dropped to fit the 1,024-byte limit) differs from "empty".
type policyMetadata struct {
	SHA         string  `json:"sha"`
	Path        *string `json:"path,omitempty"`
	Title       *string `json:"title,omitempty"`
	LastUpdated *string `json:"lastUpdated,omitempty"`
	// ContentETag is the entry's, so that a listing knows what the content
	// mirror holds without reading values.
	ContentETag string `json:"contentEtag,omitempty"`
	// Legacy marks an entry that carries v1 fields (fileNo, previewUrl,
	// downloadUrl), which only the value holds.
	Legacy bool `json:"legacy,omitempty"`
}

// PolicyPair encodes e as policy:{e.PolicyName} with metadata
// {"sha","path","title","lastUpdated"} (+ "contentEtag" when e has one,
// "legacy":true when e carries v1 fields). When that would break the 1,024-byte metadata limit, or e is not
// active, the metadata is {"sha"} alone and readers Get the value.
func PolicyPair(e policy.Entry) Pair {
	legacy := e.HasLegacy()
	meta := MustJSON(policyMetadata{SHA: e.SHA, Path: &e.Path, Title: &e.Title, LastUpdated: &e.LastUpdated, ContentETag: e.ContentETag, Legacy: legacy})
	if len(meta) > policy.MaxMetadataBytes || e.Status != policy.StatusActive {
		meta = MustJSON(policyMetadata{SHA: e.SHA, Legacy: legacy})
	}
	return Pair{Key: PolicyKey(e.PolicyName), Value: MustJSON(e), Metadata: meta}
}

// QueuePair encodes q as queue:{q.PolicyName}, with metadata saying whether
// it records a failure, so a listing finds the failures without reading values.
// Its metadata also holds the entry (listed.go), its error message cut to fit.
func QueuePair(q policy.QueueEntry) Pair {
	return Pair{Key: QueueKey(q.PolicyName), Value: MustJSON(q), Metadata: queueMetadataOf(q)}
}

// DeadLetterPair encodes d as dead-letter:{d.PolicyName}, its metadata
// holding the dead letter as QueuePair's does.
func DeadLetterPair(d policy.DeadLetter) Pair {
	return Pair{Key: DeadLetterKey(d.PolicyName), Value: MustJSON(d), Metadata: deadLetterMetadataOf(d)}
}

// Queue returns every queue:{name} entry by name: from the listing's
// metadata where it holds the entry whole, else from bulk reads (listed.go),
// never one request per entry. When some values do not decode, it returns
// the others with a *DecodeError naming those keys; any other error means
// the read failed and the map is nil.
func (r *Registry) Queue(ctx context.Context) (map[string]policy.QueueEntry, error) {
	return listed(ctx, r, QueuePrefix, func(it Item) (policy.QueueEntry, bool) { return queueFromMetadata(it, QueuePrefix) })
}

// DeadLetters returns every dead-letter:{name} entry by name, read as Queue
// reads, with its error contract.
func (r *Registry) DeadLetters(ctx context.Context) (map[string]policy.DeadLetter, error) {
	return listed(ctx, r, DeadLetterPrefix, deadLetterFromMetadata)
}

// LastCommit returns the last synced commit sha, or "" when none was
// recorded. The value is a raw string; surrounding space and JSON quotes
// (as the original v2 algorithm spec showed it) are tolerated.
func (r *Registry) LastCommit(ctx context.Context) (string, error) {
	raw, err := r.store.Get(ctx, LastCommitKey)
	if errors.Is(err, policy.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("registry: read last commit: %w", err)
	}
	return parseCommit(raw), nil
}

// LastRun returns the summary of the last run, or nil when none was
// recorded. A value that does not decode is an error.
func (r *Registry) LastRun(ctx context.Context) (*policy.RunSummary, error) {
	raw, err := r.store.Get(ctx, LastRunKey)
	if errors.Is(err, policy.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("registry: read last run: %w", err)
	}
	var s policy.RunSummary
	if err := decodeObject(raw, &s); err != nil {
		return nil, fmt.Errorf("registry: decode %s: %w", LastRunKey, err)
	}
	return &s, nil
}

// Runs returns up to limit run summaries from the run history, newest first
// (all of them when limit <= 0): one listing, then bulk reads of the values
// (100 a request). Undecodable ones are skipped and named in a *DecodeError
// returned with the others, as Queue does.
func (r *Registry) Runs(ctx context.Context, limit int) ([]policy.RunSummary, error) {
	items, err := r.store.List(ctx, RunPrefix)
	if err != nil {
		return nil, fmt.Errorf("registry: read runs: %w", err)
	}
	if limit > 0 && len(items) > limit {
		items = items[:limit]
	}
	keys := make([]string, 0, len(items))
	for _, it := range items {
		keys = append(keys, it.Key)
	}
	return r.runsOf(ctx, keys)
}

// runsOf reads the runs of keys, in order, with bulk reads.
func (r *Registry) runsOf(ctx context.Context, keys []string) ([]policy.RunSummary, error) {
	var (
		runs []policy.RunSummary
		bad  *DecodeError
	)
	for start := 0; start < len(keys); start += maxManyKeys {
		part := keys[start:min(start+maxManyKeys, len(keys))]
		got, err := r.getMany(ctx, part)
		if err != nil {
			return nil, fmt.Errorf("registry: read runs: %w", err)
		}
		for _, k := range part {
			raw, ok := got[k]
			if !ok {
				continue // expired since it was listed
			}
			var s policy.RunSummary
			if err := decodeObject(raw, &s); err != nil {
				bad = bad.add(k, err)
				continue
			}
			runs = append(runs, s)
		}
	}
	if bad != nil {
		return runs, bad
	}
	return runs, nil
}

// RecordRun writes the metadata of a run, last of all its writes: the run
// history key RunKey(at, s.RunID) (expiring after RunTTL) and lastRun in
// one batch; then, only when that batch landed, lastCommit = advance (when
// not empty) and then (a run releases its lease there with LeaseRelease) in
// a second. So lastCommit never advances past a run that was not recorded,
// and a run whose record did not land leaves its lease behind. The error (a
// *BatchError) names every key that failed.
func (r *Registry) RecordRun(ctx context.Context, s policy.RunSummary, at time.Time, advance string, then ...Write) error {
	ctx = Recording(ctx)
	value := MustJSON(s)
	history := Pair{Key: RunKey(at, s.RunID), Value: value, Metadata: runMetadataOf(s), TTL: RunTTL}
	last := Pair{Key: LastRunKey, Value: value}
	if out := r.Write(ctx, Write{put: &history}, Write{put: &last}); out != nil {
		return &BatchError{Op: "record run", Failed: out}
	}
	if advance != "" {
		then = append([]Write{{put: &Pair{Key: LastCommitKey, Value: []byte(advance)}}}, then...)
	}
	if len(then) == 0 {
		return nil
	}
	if out := r.Write(ctx, then...); out != nil {
		op := "release lease"
		if _, ok := out[LastCommitKey]; ok {
			op = "advance last commit"
		}
		return &BatchError{Op: op, Failed: out}
	}
	return nil
}

// RecordCost is what RecordRun(ctx, s, at, advance, with...) will be billed
// for on a backend that bills per write (0 on others): the history key,
// lastRun, lastCommit when it advances, and each of with. A run adds it to
// its billable writes before recording, so the day's total is right.
func (r *Registry) RecordCost(advance string, with ...Write) int64 {
	if !r.store.Usage().Billing {
		return 0
	}
	n := int64(2 + len(with))
	if advance != "" {
		n++
	}
	return n
}

// getObject reads the object of key (what names it in errors: the store's
// name the key).
func (r *Registry) getObject(ctx context.Context, what, key string, v any) error {
	raw, err := r.store.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("registry: read %s: %w", what, err)
	}
	if err := decodeObject(raw, v); err != nil {
		var bad *DecodeError
		return bad.add(key, err)
	}
	return nil
}

// what names the values under a prefix, for errors.
func what(prefix string) string {
	switch prefix {
	case PolicyPrefix:
		return "policies"
	case QueuePrefix:
		return "queue"
	case DeadLetterPrefix:
		return "dead letters"
	}
	return prefix
}

// fill gets the value of an item listed without it; ok is false when the key
// has gone since it was listed. Its errors are the store's (which name the
// key): the caller says what it was reading.
func (r *Registry) fill(ctx context.Context, it Item) (Item, bool, error) {
	if it.Value != nil {
		return it, true, nil
	}
	if err := ctx.Err(); err != nil {
		return it, false, fmt.Errorf("get %q: %w", it.Key, err)
	}
	v, err := r.store.Get(ctx, it.Key)
	if errors.Is(err, policy.ErrNotFound) {
		return it, false, nil
	}
	if err != nil {
		return it, false, err
	}
	it.Value = v
	return it, true, nil
}

// DecodeError names the stored values that could not be decoded, by key.
type DecodeError struct {
	Problems map[string]error
}

func (e *DecodeError) add(key string, err error) *DecodeError {
	if e == nil {
		e = &DecodeError{Problems: make(map[string]error)}
	}
	e.Problems[key] = err
	return e
}

func (e *DecodeError) Error() string {
	return "registry: unreadable values: " + joinKeyErrors(e.Problems)
}

// BatchError names every key of a write that failed, with its error.
type BatchError struct {
	Op     string // what the write was for, e.g. "record run"
	Failed map[string]error
}

func (e *BatchError) Error() string {
	return "registry: " + e.Op + ": " + joinKeyErrors(e.Failed)
}

// Unwrap returns the errors of the failed keys, in key order, so errors.Is
// sees policy.ErrTooLarge and the like.
func (e *BatchError) Unwrap() []error {
	keys := sortedKeys(e.Failed)
	errs := make([]error, len(keys))
	for i, k := range keys {
		errs[i] = e.Failed[k]
	}
	return errs
}

func joinKeyErrors(m map[string]error) string {
	var b strings.Builder
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %v", k, m[k])
	}
	return b.String()
}

func sortedKeys(m map[string]error) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

var errNotObject = errors.New("not a JSON object")

// decodeObject decodes a JSON object into v; any other JSON (null, a string)
// is an error rather than a zero value.
func decodeObject(raw []byte, v any) error {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return errNotObject
	}
	return json.Unmarshal(t, v)
}

// MustJSON encodes v without HTML escaping (titles keep their '&'). The
// domain types always encode, so an error is a programming error. It
// encodes into a pooled buffer and returns an exact copy: a run makes each
// pair twice as its batch is sent (checked, then encoded), and a buffer
// grown from 64 bytes for each value was garbage (BenchmarkEncode: a
// policy's pair 1,024 -> 928 bytes, a queue entry's 1,056 -> 856).
func MustJSON(v any) []byte {
	e := jsonEncoders.Get().(*jsonEncoder)
	defer e.release()
	if err := e.enc.Encode(v); err != nil {
		panic(fmt.Sprintf("registry: encode %T: %v", v, err))
	}
	return bytes.Clone(bytes.TrimSuffix(e.buf.Bytes(), []byte("\n")))
}

// jsonEncoder is an encoder writing into its own buffer, kept for reuse
// in jsonEncoders.
type jsonEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// maxPooledJSON is the largest buffer kept for reuse: a run's summary
// may take a megabyte once, and the pool would hold it.
const maxPooledJSON = 64 << 10

var jsonEncoders = sync.Pool{New: func() any {
	e := &jsonEncoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

// release empties the encoder's buffer and returns it to the pool, unless
// it grew too large to keep.
func (e *jsonEncoder) release() {
	if e.buf.Cap() > maxPooledJSON {
		return
	}
	e.buf.Reset()
	jsonEncoders.Put(e)
}

// EventuallyConsistent reports whether reads of the store may lag its
// writes, as Workers KV's may by up to a minute from another location: a
// store says so with a method EventuallyConsistent() bool. Bolt and memory
// read what they wrote.
func (r *Registry) EventuallyConsistent() bool {
	ec, ok := r.store.(interface{ EventuallyConsistent() bool })
	return ok && ec.EventuallyConsistent()
}
