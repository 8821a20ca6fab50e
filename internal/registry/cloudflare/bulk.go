package cloudflare

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/knue/syncjob/internal/registry"
)

// Cloudflare's bulk limits: pairs (or keys) per request and bytes per body.
const (
	MaxBulkPairs = 10000
	MaxBulkBytes = 100_000_000
)

// bulkPair is one element of a bulk write body.
type bulkPair struct {
	Key           string          `json:"key"`
	Value         string          `json:"value"`
	Metadata      json.RawMessage `json:"metadata,omitempty"`
	ExpirationTTL int64           `json:"expiration_ttl,omitempty"`
	Base64        bool            `json:"base64,omitempty"`
}

// bulkResult is the result of a bulk write or delete, which cloudflare-go
// v0 does not decode.
type bulkResult struct {
	SuccessfulKeyCount int      `json:"successful_key_count"`
	UnsuccessfulKeys   []string `json:"unsuccessful_keys"`
}

// encodePair encodes p for the bulk endpoint: the value as a JSON string
// when it is valid UTF-8, else base64.
func encodePair(p registry.Pair) []byte {
	bp := bulkPair{Key: p.Key, Metadata: p.Metadata}
	if utf8.Valid(p.Value) {
		bp.Value = string(p.Value)
	} else {
		bp.Value = base64.StdEncoding.EncodeToString(p.Value)
		bp.Base64 = true
	}
	if p.TTL > 0 {
		bp.ExpirationTTL = int64((p.TTL + time.Second - 1) / time.Second)
	}
	return registry.MustJSON(bp)
}

// bulkBody is one request's body and the keys it carries.
type bulkBody struct {
	keys []string
	body []byte
}

// chunk groups encoded elements into JSON arrays of at most MaxBulkPairs
// elements and MaxBulkBytes bytes.
func chunk(keys []string, elems [][]byte) []bulkBody {
	var out []bulkBody
	var cur bulkBody
	flush := func() {
		if len(cur.keys) > 0 {
			cur.body = append(cur.body, ']')
			out = append(out, cur)
		}
		cur = bulkBody{}
	}
	for i, e := range elems {
		if len(cur.keys) == MaxBulkPairs || (len(cur.keys) > 0 && len(cur.body)+1+len(e)+1 > MaxBulkBytes) {
			flush()
		}
		if len(cur.keys) == 0 {
			cur.body = append(cur.body, '[')
		} else {
			cur.body = append(cur.body, ',')
		}
		cur.body = append(cur.body, e...)
		cur.keys = append(cur.keys, keys[i])
	}
	flush()
	return out
}

// Put implements registry.Store: the pairs go as bulk writes, one request
// per 10,000 pairs or 100 MB (a single pair too: only the bulk endpoint
// writes metadata with the value).
func (s *Store) Put(ctx context.Context, pairs []registry.Pair) map[string]error {
	valid, outcome := registry.ValidatePairs(pairs)
	if len(valid) == 0 {
		return outcome
	}
	keys := registry.PairKeys(valid)
	if s.closed.Load() {
		return registry.FailAll(outcome, keys, fmt.Errorf("cloudflare: bulk write %d keys: %w", len(keys), registry.ErrClosed))
	}
	if err := ctx.Err(); err != nil {
		return registry.FailAll(outcome, keys, fmt.Errorf("cloudflare: bulk write %d keys: %w", len(keys), err))
	}
	elems := make([][]byte, len(valid))
	for i, p := range valid {
		elems[i] = encodePair(p)
	}
	for _, b := range chunk(keys, elems) {
		outcome = s.bulk(ctx, "write", http.MethodPut, s.namespacePath("bulk"), b, outcome, &s.writes)
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
	if s.closed.Load() {
		return registry.FailAll(outcome, valid, fmt.Errorf("cloudflare: bulk delete %d keys: %w", len(valid), registry.ErrClosed))
	}
	if err := ctx.Err(); err != nil {
		return registry.FailAll(outcome, valid, fmt.Errorf("cloudflare: bulk delete %d keys: %w", len(valid), err))
	}
	elems := make([][]byte, len(valid))
	for i, k := range valid {
		elems[i] = registry.MustJSON(k)
	}
	for _, b := range chunk(valid, elems) {
		outcome = s.bulk(ctx, "delete", http.MethodPost, s.namespacePath("bulk/delete"), b, outcome, &s.deletes)
	}
	return outcome
}

// bulk sends one bulk request and records the outcome of its keys: all of
// them failing when the request fails, those in unsuccessful_keys otherwise.
func (s *Store) bulk(ctx context.Context, verb, method, path string, b bulkBody, outcome map[string]error, billed *atomic.Int64) map[string]error {
	n := len(b.keys)
	r, err := s.api.Raw(ctx, method, path, b.body, http.Header{"Content-Type": {"application/json"}})
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
		return registry.FailAll(outcome, b.keys, fmt.Errorf("cloudflare: bulk %s %d keys: %w", verb, n, s.edge(ctx, err)))
	}
	inBatch := make(map[string]bool, n)
	for _, k := range b.keys {
		inBatch[k] = true
	}
	failed := 0
	for _, k := range res.UnsuccessfulKeys {
		if !inBatch[k] {
			continue
		}
		inBatch[k] = false
		failed++
		outcome = registry.FailAll(outcome, []string{k}, fmt.Errorf("cloudflare: bulk %s %d keys: %q: %w", verb, n, k, ErrUnsuccessful))
	}
	billed.Add(int64(n - failed))
	return outcome
}
