package cloudflare

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/retry"
)

// Cloudflare's bulk limits: pairs (or keys) per request and bytes per body.
const (
	MaxBulkPairs = 10000
	MaxBulkBytes = 100_000_000
)

// bulkResult is the result of a bulk write or delete, which cloudflare-go
// v0 does not decode.
type bulkResult struct {
	SuccessfulKeyCount int      `json:"successful_key_count"`
	UnsuccessfulKeys   []string `json:"unsuccessful_keys"`
}

// encodePair encodes p for the bulk endpoint: the value as a JSON string,
// or base64 when that is shorter or the value is not UTF-8 (appendPair), at
// its exact length.
func encodePair(p registry.Pair) []byte {
	return appendPair(make([]byte, 0, pairLen(p)), p)
}

// encodeLettingGo encodes the ith pair and lets go of it: the caller holds
// no pair (the syncer's batch keeps names and keys), so each value is free
// once its element is in the body, and a batch of 10,000 entries is not
// held twice, as pairs and as the body, while the body is made.
func encodeLettingGo(pairs []registry.Pair) func(i int) []byte {
	return func(i int) []byte {
		e := encodePair(pairs[i])
		pairs[i] = registry.Pair{}
		return e
	}
}

// bulkBody is one request's body, the JSON array of its elements, and
// the keys of the elements in order. The elements are encoded straight
// into the body, so a batch of 10,000 entries is held once, not once as
// elements and again as the body.
type bulkBody struct {
	keys   []string
	body   []byte
	starts []int // where each element begins in body
}

// json is the request body.
func (b bulkBody) json() []byte { return b.body }

// size is the body's length with one more element e.
func (b bulkBody) sizeWith(e []byte) int {
	if len(b.keys) == 0 {
		return 2 + len(e)
	}
	return len(b.body) + 1 + len(e)
}

// add appends the element e of key.
func (b *bulkBody) add(key string, e []byte) {
	if len(b.keys) == 0 {
		b.body = append(b.body, '[')
	} else {
		b.body[len(b.body)-1] = ',' // the closing bracket
	}
	b.starts = append(b.starts, len(b.body))
	b.body = append(append(b.body, e...), ']')
	b.keys = append(b.keys, key)
}

// elem is the ith element.
func (b bulkBody) elem(i int) []byte {
	end := len(b.body) - 1
	if i+1 < len(b.starts) {
		end = b.starts[i+1] - 1
	}
	return b.body[b.starts[i]:end]
}

// onlyBody is b with only the given keys, in b's order.
func (b bulkBody) onlyBody(keys []string) bulkBody {
	keep := make(map[string]bool, len(keys))
	for _, k := range keys {
		keep[k] = true
	}
	var out bulkBody
	for i, k := range b.keys {
		if keep[k] {
			out.add(k, b.elem(i))
		}
	}
	return out
}

// chunk encodes the elements of keys (encode(i) is the ith) into bodies of
// at most MaxBulkPairs elements and maxBytes bytes. bound(i), when bound is
// not nil, is at least the length of the ith element: each body is then
// made at its size once, not grown by copying (a body of 10,000 policy
// entries is some 7 MB, and growing it held up to twice that).
func chunk(keys []string, encode func(i int) []byte, bound func(i int) int, maxBytes int) []bulkBody {
	var out []bulkBody
	var cur bulkBody
	for i, k := range keys {
		e := encode(i)
		if len(cur.keys) == MaxBulkPairs || (len(cur.keys) > 0 && cur.sizeWith(e) > maxBytes) {
			out = append(out, cur)
			cur = bulkBody{}
		}
		if len(cur.keys) == 0 && bound != nil {
			cur = sized(len(e), i+1, len(keys), bound, maxBytes)
		}
		cur.add(k, e)
	}
	if len(cur.keys) > 0 {
		out = append(out, cur)
	}
	return out
}

// sized is an empty body with room for the element of length first and
// those from next on that the body may take (bound(i) at least the length
// of the ith).
func sized(first, next, n int, bound func(i int) int, maxBytes int) bulkBody {
	size, count := 1+first+1, 1 // [first]
	for i := next; i < n && count < MaxBulkPairs; i++ {
		b := bound(i) + 1 // the comma before it
		if size+b > maxBytes {
			break
		}
		size, count = size+b, count+1
	}
	return bulkBody{body: make([]byte, 0, size), keys: make([]string, 0, count), starts: make([]int, 0, count)}
}

// Put implements registry.Store: the pairs go as bulk writes, one request
// per 10,000 pairs or 100 MB (a single pair too: only the bulk endpoint
// writes metadata with the value).
func (s *Store) Put(ctx context.Context, pairs []registry.Pair) map[string]error {
	valid, outcome := registry.ValidatePairs(pairs)
	return s.putBodies(ctx, registry.PairKeys(valid), encodeLettingGo(valid), func(i int) int { return pairLen(valid[i]) }, outcome)
}

// PutMade implements registry.PairMaker: Put with each pair made when it
// is checked (and measured, pairLen, not encoded) and again when it is
// encoded into the request body as the request is written (streamedBody),
// so that neither a batch's encoded values nor its body are held while it
// is sent (at 10,000 a batch: some 5 and 6 MB; docs/bench.md). pair(i) is
// the pair of keys[i].
func (s *Store) PutMade(ctx context.Context, keys []string, pair func(i int) registry.Pair) map[string]error {
	idx, outcome, lens, err := s.check(ctx, keys, pair)
	if err != nil {
		return registry.FailAll(nil, keys, fmt.Errorf("cloudflare: bulk write %d keys: %w", len(keys), err))
	}
	if len(idx) == 0 {
		return outcome // nothing to send, as Put
	}
	valid := keys
	if len(idx) < len(keys) { // else every key is valid: no second list of them
		valid = make([]string, len(idx))
		for j, i := range idx {
			valid[j] = keys[i]
		}
	}
	if err := s.canSend(ctx, "write", valid); err != nil {
		return registry.FailAll(outcome, valid, err)
	}
	op := s.writeOp()
	for _, b := range chunkStreamed(valid, idx, lens, func(dst []byte, i int) []byte { return appendPair(dst, pair(i)) }, s.cfg.MaxBulkBytes) {
		outcome = s.bulk(ctx, op, b, outcome)
	}
	return outcome
}

// check makes each pair of keys to check and measure it (pairLen, not
// encoded), a large batch one at a time (makingGate): it returns the
// indexes of the valid pairs, the failures of the others and the valid
// ones' lengths. The error is the context's, ended while another batch
// was made.
func (s *Store) check(ctx context.Context, keys []string, pair func(i int) registry.Pair) (idx []int, failed map[string]error, lens []int, err error) {
	release, err := s.making.take(ctx, len(keys))
	if err != nil {
		return nil, nil, nil, err
	}
	defer release()
	lens = make([]int, 0, len(keys))
	idx, failed = registry.ValidateEach(keys, func(i int) error {
		p := pair(i)
		if err := registry.CheckPair(p); err != nil {
			return err
		}
		lens = append(lens, pairLen(p))
		return nil
	})
	return idx, failed, lens, nil
}

// canSend says why a bulk verb of keys cannot be sent: the store is
// closed, or the context ended.
func (s *Store) canSend(ctx context.Context, verb string, keys []string) error {
	if s.closed.Load() {
		return fmt.Errorf("cloudflare: bulk %s %d keys: %w", verb, len(keys), registry.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cloudflare: bulk %s %d keys: %w", verb, len(keys), err)
	}
	return nil
}

// writeOp is the bulk write endpoint.
func (s *Store) writeOp() bulkOp {
	return bulkOp{verb: "write", method: http.MethodPut, path: s.namespacePath("bulk"), billed: &s.writes}
}

// putBodies sends the valid pairs of a put, keys[i]'s encoded by
// encode(i) with at most bound(i) bytes, as bulk writes; outcome holds the
// failures of the invalid ones.
func (s *Store) putBodies(ctx context.Context, keys []string, encode func(i int) []byte, bound func(i int) int, outcome map[string]error) map[string]error {
	if len(keys) == 0 {
		return outcome
	}
	if err := s.canSend(ctx, "write", keys); err != nil {
		return registry.FailAll(outcome, keys, err)
	}
	op := s.writeOp()
	for _, b := range chunk(keys, encode, bound, s.cfg.MaxBulkBytes) {
		outcome = s.bulk(ctx, op, b, outcome)
	}
	return outcome
}

// Delete implements registry.Store with bulk deletes (POST .../bulk/delete),
// one request per 10,000 keys.
func (s *Store) Delete(ctx context.Context, keys []string) map[string]error {
	valid, outcome := registry.ValidateKeys(keys)
	if len(valid) == 0 {
		return outcome
	}
	if err := s.canSend(ctx, "delete", valid); err != nil {
		return registry.FailAll(outcome, valid, err)
	}
	op := bulkOp{verb: "delete", method: http.MethodPost, path: s.namespacePath("bulk/delete"), billed: &s.deletes}
	for _, b := range chunk(valid, func(i int) []byte { return registry.MustJSON(valid[i]) }, nil, s.cfg.MaxBulkBytes) {
		outcome = s.bulk(ctx, op, b, outcome)
	}
	return outcome
}

// bulkOp is a bulk endpoint: what it does (for errors), how it is called,
// and what a key it applies is billed as.
type bulkOp struct {
	verb, method, path string
	billed             *atomic.Int64
}

// keyRetryWaits are the waits before each re-send of the keys a bulk answer
// listed in unsuccessful_keys: a second at least, since KV applies one
// write per key per second, then doubling. Cloudflare asks for such keys to
// be retried; 5xx, 429s and timeouts are retried by the transport instead.
var keyRetryWaits = []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}

// errSomeUnsuccessful: a bulk answer listed keys in unsuccessful_keys.
var errSomeUnsuccessful = errors.New("some keys unsuccessful")

// requestFailed is a bulk request that got no usable answer, after the
// transport's retries: its keys fail with it, and are not re-sent.
type requestFailed struct{ err error }

func (e *requestFailed) Error() string { return e.err.Error() }

// bulk sends one bulk request, re-sends the keys Cloudflare lists in
// unsuccessful_keys after each wait of keyRetryWaits (only while the
// context's deadline allows), and records the outcome of the keys: those
// still unsuccessful fail with ErrUnsuccessful, all that a failed request
// carried fail with its error.
func (s *Store) bulk(ctx context.Context, op bulkOp, b payload, outcome map[string]error) map[string]error {
	n := len(b.keyList())
	pending, tries := b, 0
	p := retry.Policy{
		MaxRetries: len(keyRetryWaits),
		Wait:       retry.Fixed(keyRetryWaits),
		Classify:   func(err error) retry.Decision { return retry.Decision{Retry: err == errSomeUnsuccessful} },
		Sleep:      s.cfg.Sleep,
		OnRetry: func(ctx context.Context, r retry.Retry) {
			s.log.WarnContext(ctx, "re-sending keys cloudflare reported unsuccessful", logkey.Op, "bulk "+op.verb, logkey.Entries, len(pending.keyList()), logkey.Attempt, r.N, logkey.Wait, r.Wait.String())
		},
	}
	var last error // the last try's, which Do does not return when the context ends
	_, err := retry.Do(ctx, p, func(ctx context.Context) (struct{}, error) {
		tries++
		failed, err := s.send(ctx, op, pending)
		if err != nil {
			last = &requestFailed{err: err}
			return struct{}{}, last
		}
		if pending = pending.only(failed); len(failed) > 0 {
			last = errSomeUnsuccessful
			return struct{}{}, last
		}
		return struct{}{}, nil
	})
	var rf *requestFailed
	switch {
	case err == nil:
		return outcome
	case errors.As(err, &rf):
		return registry.FailAll(outcome, pending.keyList(), fmt.Errorf("cloudflare: bulk %s %d keys: %w", op.verb, n, s.edge(ctx, rf.err)))
	case errors.As(last, &rf): // the context ended while the request was out: no answer, not an unsuccessful key (an adversarial helper)
		return registry.FailAll(outcome, pending.keyList(), fmt.Errorf("cloudflare: bulk %s %d keys: %w", op.verb, n, s.edge(ctx, err)))
	}
	for _, k := range pending.keyList() {
		kerr := fmt.Errorf("cloudflare: bulk %s %d keys: %q: %w (%d tries)", op.verb, n, k, ErrUnsuccessful, tries)
		var cut *retry.PastDeadline
		switch {
		case errors.As(err, &cut): // a re-send would end after the deadline: the run waits, counting no failure
			kerr = fmt.Errorf("%w; a re-send in %s would pass the run's deadline: %w", kerr, cut.Wait, cut)
		case err != errSomeUnsuccessful: // the context ended before a re-send
			kerr = fmt.Errorf("%w: %w", kerr, err)
		}
		outcome = registry.FailAll(outcome, []string{k}, kerr)
	}
	return outcome
}

// send makes one bulk request (the transport retries it on 429, 5xx and
// timeouts) and returns the keys of b that the answer lists in
// unsuccessful_keys; the others are billed, and so is every pair of a try
// that may have been applied unanswered.
func (s *Store) send(ctx context.Context, op bulkOp, b payload) ([]string, error) {
	keys := b.keyList()
	if sb, ok := b.(streamedBody); ok { // made as it is sent: one body at a time
		release, err := s.making.take(ctx, len(sb.keys))
		if err != nil {
			return nil, err
		}
		defer release() // when the answer came before the body was all made
		sb.made = release
		b = sb
	}
	// A try Cloudflare may have applied unanswered is billed, every pair of
	// it: the daily write budget must not count less than was spent (an
	// adversarial helper: a batch of 10,000 applied, its answer lost or cut
	// by the deadline, re-sent, counted once or not at all).
	var unanswered atomic.Int64
	r, err := s.api.Raw(countUnanswered(ctx, &unanswered), op.method, op.path, b.data(), http.Header{"Content-Type": {"application/json"}})
	op.billed.Add(unanswered.Load() * int64(len(keys)))
	if err == nil && !r.Success {
		err = fmt.Errorf("answer not successful: %v", r.Errors)
	}
	var res bulkResult
	if err == nil && len(r.Result) > 0 && string(r.Result) != "null" {
		if jerr := json.Unmarshal(r.Result, &res); jerr != nil {
			err = fmt.Errorf("decode result: %w", jerr)
		}
	}
	if err != nil {
		return nil, err
	}
	inBatch := make(map[string]bool, len(keys))
	for _, k := range keys {
		inBatch[k] = true
	}
	var failed []string
	for _, k := range res.UnsuccessfulKeys {
		if inBatch[k] {
			inBatch[k] = false
			failed = append(failed, k)
		}
	}
	op.billed.Add(int64(len(keys) - len(failed)))
	return failed, nil
}
