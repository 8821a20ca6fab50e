package registry

import "context"

// PageLister is a Store that lists a page at a time (Cloudflare: 1,000 keys
// a request). A caller that keeps a little of each key — a full run reading
// every policy's version — then never holds the whole listing at once
// (docs/bench.md, "A full run's memory").
type PageLister interface {
	// ListPages calls page with each page of the live keys that start with
	// prefix, in the order the backend lists them, each item as List gives
	// it; the items are the caller's. It returns List's errors, and the
	// first error page returns, which stops the listing.
	ListPages(ctx context.Context, prefix string, page func([]Item) error) error
}

// listPages lists prefix a page at a time when the store can, else as one
// page.
func (r *Registry) listPages(ctx context.Context, prefix string, page func([]Item) error) error {
	if p, ok := r.store.(PageLister); ok {
		return p.ListPages(ctx, prefix, page)
	}
	items, err := r.store.List(ctx, prefix)
	if err != nil {
		return err
	}
	return page(items)
}
