package cloudflare

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/knue/syncjob/internal/registry"
)

// listLimit is the largest page Cloudflare lists.
const listLimit = 1000

// listedKey is one key of a listing page.
type listedKey struct {
	Name       string          `json:"name"`
	Expiration int64           `json:"expiration"`
	Metadata   json.RawMessage `json:"metadata"`
}

// List implements registry.Store: one request per 1,000 keys; items carry
// metadata and expiration but no value.
func (s *Store) List(ctx context.Context, prefix string) ([]registry.Item, error) {
	var items []registry.Item
	err := s.ListPages(ctx, prefix, func(page []registry.Item) error {
		items = append(items, page...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].Key < items[j].Key })
	return items, nil
}

// ListPages implements registry.PageLister: List one page (1,000 keys, one
// request) at a time, so that a caller keeping a little of each key never
// holds the whole listing.
func (s *Store) ListPages(ctx context.Context, prefix string, page func([]registry.Item) error) error {
	if s.closed.Load() {
		return fmt.Errorf("cloudflare: list %q: %w", prefix, registry.ErrClosed)
	}
	cursor := ""
	seen := cursors{}
	for {
		items, next, err := s.listPage(ctx, prefix, cursor)
		if err != nil {
			return err
		}
		if err := page(items); err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		if seen.repeated(next) {
			return fmt.Errorf("cloudflare: list %q: cursor repeated", prefix)
		}
		cursor = next
	}
}

// listPage lists the page of prefix at cursor; next is the next page's
// cursor, "" after the last.
func (s *Store) listPage(ctx context.Context, prefix, cursor string) (items []registry.Item, next string, err error) {
	if err := ctx.Err(); err != nil {
		return nil, "", fmt.Errorf("cloudflare: list %q: %w", prefix, err)
	}
	q := url.Values{"limit": {strconv.Itoa(listLimit)}}
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	r, err := s.api.Raw(ctx, http.MethodGet, s.namespacePath("keys")+"?"+q.Encode(), nil, nil)
	if err != nil {
		return nil, "", fmt.Errorf("cloudflare: list %q: %w", prefix, s.edge(ctx, err))
	}
	if !r.Success {
		return nil, "", fmt.Errorf("cloudflare: list %q: answer not successful: %v", prefix, r.Errors)
	}
	var page []listedKey
	if err := json.Unmarshal(r.Result, &page); err != nil {
		return nil, "", fmt.Errorf("cloudflare: list %q: decode page: %w", prefix, err)
	}
	items = make([]registry.Item, 0, len(page))
	for _, k := range page {
		it := registry.Item{Key: k.Name}
		if m := bytes.TrimSpace(k.Metadata); len(m) > 0 && string(m) != "null" {
			it.Metadata = json.RawMessage(bytes.Clone(m))
		}
		if k.Expiration > 0 {
			it.Expiration = time.Unix(k.Expiration, 0).UTC()
		}
		items = append(items, it)
	}
	if r.ResultInfo != nil {
		next = r.ResultInfo.Cursor
	}
	return items, next, nil
}

// cursors are the cursors a listing was given, to stop one that repeats.
// Each is kept as a copy: the API client decodes a response's strings as
// slices of the whole response, so a cursor kept as given would keep its
// page's 150-250 KB body for as long as the listing lasts
// (docs/bench.md, "A full run's memory").
type cursors map[string]bool

// repeated reports whether c was seen before, and remembers it.
func (s cursors) repeated(c string) bool {
	if s[c] {
		return true
	}
	s[strings.Clone(c)] = true
	return false
}
