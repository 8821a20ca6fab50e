package cloudflare

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/knue/syncjob/internal/registry"
)

// MaxBulkGetKeys is how many keys Cloudflare reads in one bulk get.
const MaxBulkGetKeys = 100

// The registry finds GetMany through an optional interface of its own: a
// backend with a bulk read implements it (memory and bolt need not).
var _ interface {
	GetMany(ctx context.Context, keys []string) (map[string][]byte, error)
} = (*Store)(nil)

// GetMany reads the values of keys with Cloudflare's bulk get (POST
// .../bulk/get), one request per 100 keys: the registry's metadata keys
// in one request rather than one each. A key without a value is absent
// from the map. The values must be text (KV's bulk read returns strings:
// bytes that are not UTF-8 would come back altered); use Get for others.
//
// Errors: a key that cannot be a key wraps policy.ErrTooLarge (nothing is
// sent); otherwise as Get (see Store), naming the request.
func (s *Store) GetMany(ctx context.Context, keys []string) (map[string][]byte, error) {
	var want []string
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if err := registry.CheckKey(k); err != nil {
			return nil, fmt.Errorf("cloudflare: bulk get: %w", err)
		}
		if !seen[k] {
			seen[k] = true
			want = append(want, k)
		}
	}
	if s.closed.Load() {
		return nil, fmt.Errorf("cloudflare: bulk get %d keys: %w", len(want), registry.ErrClosed)
	}
	out := make(map[string][]byte, len(want))
	for start := 0; start < len(want); start += MaxBulkGetKeys {
		part := want[start:min(start+MaxBulkGetKeys, len(want))]
		if err := s.bulkGet(ctx, part, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// bulkGet reads up to 100 keys in one request into out.
func (s *Store) bulkGet(ctx context.Context, keys []string, out map[string][]byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cloudflare: bulk get %d keys: %w", len(keys), err)
	}
	body := registry.MustJSON(struct {
		Keys []string `json:"keys"`
		Type string   `json:"type"`
	}{Keys: keys, Type: "text"})
	r, err := s.api.Raw(ctx, http.MethodPost, s.namespacePath("bulk/get"), body, http.Header{"Content-Type": {"application/json"}})
	if err != nil {
		return fmt.Errorf("cloudflare: bulk get %d keys: %w", len(keys), s.edge(ctx, err))
	}
	if !r.Success {
		return fmt.Errorf("cloudflare: bulk get %d keys: answer not successful: %v", len(keys), r.Errors)
	}
	var res struct {
		Values map[string]*string `json:"values"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		return fmt.Errorf("cloudflare: bulk get %d keys: decode result: %w", len(keys), err)
	}
	for _, k := range keys {
		if v := res.Values[k]; v != nil {
			out[k] = []byte(*v)
		}
	}
	return nil
}
