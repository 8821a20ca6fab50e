package cloudflare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// payload is one bulk request's body as bulk sends it and re-sends the
// keys Cloudflare reported unsuccessful: made whole (bulkBody, for Put's
// pairs and Delete's keys) or encoded as it is sent (streamedBody, for
// PutMade's).
type payload interface {
	// keyList is the keys of the elements, in order.
	keyList() []string
	// data is what the request sends: the body, or a reader of it.
	data() any
	// only is the payload of the given keys alone, in its order.
	only(keys []string) payload
}

func (b bulkBody) keyList() []string { return b.keys }

func (b bulkBody) data() any { return b.json() }

func (b bulkBody) only(keys []string) payload { return b.onlyBody(keys) }

// streamedBody is a bulk write's body made element by element as the
// request is written: encode(dst, idx[j]) appends its jth element to dst,
// lens[j] that element's exact length. Nothing holds the body: at 10,000 policy entries
// a batch (docs/bench.md, "How we got here", "Memory, fifth pass") a body
// made whole was some 6 MB live while it was sent. A re-send (the
// transport's retries, the keys Cloudflare reported unsuccessful) encodes
// the elements again.
type streamedBody struct {
	keys   []string
	idx    []int
	lens   []int
	encode func(dst []byte, i int) []byte
	// made, when not nil, is called once a reader has made the whole
	// body: it lets the next body be made (Store.making).
	made func()
}

func (s streamedBody) keyList() []string { return s.keys }

func (s streamedBody) data() any { return s.reader() }

// size is the body's length: [e,e,…].
func (s streamedBody) size() int64 {
	n := int64(2 + max(len(s.lens)-1, 0))
	for _, l := range s.lens {
		n += int64(l)
	}
	return n
}

func (s streamedBody) only(keys []string) payload {
	keep := make(map[string]bool, len(keys))
	for _, k := range keys {
		keep[k] = true
	}
	out := streamedBody{encode: s.encode}
	for j, k := range s.keys {
		if keep[k] {
			out.keys = append(out.keys, k)
			out.idx = append(out.idx, s.idx[j])
			out.lens = append(out.lens, s.lens[j])
		}
	}
	return out
}

// chunkStreamed splits the elements (lens[j] the length of keys[j]'s) into
// bodies of at most MaxBulkPairs elements and maxBytes bytes, as chunk
// does, without encoding them.
func chunkStreamed(keys []string, idx, lens []int, encode func(dst []byte, i int) []byte, maxBytes int) []streamedBody {
	if one := (streamedBody{keys: keys, idx: idx, lens: lens, encode: encode}); len(keys) <= MaxBulkPairs && one.size() <= int64(maxBytes) {
		return []streamedBody{one} // one body: the caller's lists, not copies of them
	}
	var out []streamedBody
	cur := streamedBody{encode: encode}
	size := 0
	for j, k := range keys {
		with := size + 1 + lens[j] // a comma, or the opening bracket
		if len(cur.keys) == MaxBulkPairs || (len(cur.keys) > 0 && with+1 > maxBytes) {
			out = append(out, cur)
			cur, with = streamedBody{encode: encode}, 1+lens[j]
		}
		cur.keys, cur.idx, cur.lens = append(cur.keys, k), append(cur.idx, idx[j]), append(cur.lens, lens[j])
		size = with
	}
	if len(cur.keys) > 0 {
		out = append(out, cur)
	}
	return out
}

// reader is a new reader of the body.
func (s streamedBody) reader() *bodyReader { return &bodyReader{body: s} }

// bodyReader reads a streamedBody from its start, encoding one element at
// a time. The transport knows it (RoundTrip: withStreamedBody) and gives
// the request its length and a way to read the body again.
type bodyReader struct {
	body streamedBody
	next int    // the element to encode next
	buf  []byte // what is encoded and not yet read
	room []byte // buf's storage, reused element after element
	done bool
}

// errElementChanged: an element encoded again is not as long as it was
// when the body was sized: the request fails rather than send a body
// other than the one its length announced.
var errElementChanged = errors.New("element changed length")

func (r *bodyReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(r.buf) == 0 {
			if err := r.fill(); err != nil {
				return n, err
			}
			if r.done && len(r.buf) == 0 {
				return n, io.EOF
			}
		}
		c := copy(p[n:], r.buf)
		r.buf, n = r.buf[c:], n+c
	}
	return n, nil
}

// fill encodes the next part of the body into buf: the opening bracket
// with the first element, a comma with each next one, the closing bracket.
func (r *bodyReader) fill() error {
	b := r.body
	switch {
	case r.done:
		return nil
	case r.next == len(b.keys):
		r.buf, r.done = []byte{']'}, true
		if b.made != nil {
			b.made()
		}
		if r.next == 0 {
			r.buf = []byte("[]")
		}
		return nil
	}
	sep := byte(',')
	if r.next == 0 {
		sep = '['
	}
	r.room = b.encode(append(r.room[:0], sep), b.idx[r.next]) // into the room of the elements before
	if n := len(r.room) - 1; n != b.lens[r.next] {
		return fmt.Errorf("bulk body: %q: %w (%d bytes, then %d)", b.keys[r.next], errElementChanged, b.lens[r.next], n)
	}
	r.buf = r.room
	r.next++
	return nil
}

// Close lets the next body be made, if this one was not made to its end:
// the transport closes a body it gave up on (a failed try).
func (r *bodyReader) Close() error {
	if r.body.made != nil {
		r.body.made()
	}
	return nil
}

// makingGate lets one large bulk body be made at a time (Store.making):
// its check pass (PutMade) or its encoding as it is sent. Two batches of
// 10,000 in flight then overlap one's wait for its answer with the
// other's making, as before, but are never made at once: at 50,000
// policies and 10,000 a batch, peak RSS went from 60.6-65.3 MiB to
// 54.0-57.7 at the same speed; one batch in flight at a time instead took
// 52.7 MiB but 1.32x the minimal client, not 1.17x (docs/bench.md, "Where
// the memory goes"). A memory bound, not a lock: a body is let go once
// made, closed or answered; a re-send after that goes without it.
type makingGate chan struct{}

// gatedPairs is the fewest pairs whose making takes the gate: a lease
// write or a batch of the default 50 never waits behind a large body,
// which a stalled upload may hold for minutes of retries (review: the
// lease's renewal waited behind one).
const gatedPairs = 1000

// take waits for the gate, or for ctx to end, to make a body of n pairs
// (at once when n is under gatedPairs). release lets it go; it may be
// called more than once.
func (g makingGate) take(ctx context.Context, n int) (release func(), err error) {
	if n < gatedPairs {
		return func() {}, nil
	}
	select {
	case g <- struct{}{}:
		return sync.OnceFunc(func() { <-g }), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// withStreamedBody is req with its length and GetBody when its body is a
// bodyReader (cloudflare-go makes the request from the reader, not knowing
// either): the transport may then send it again, and the request goes with
// a Content-Length, not chunked. Other requests are returned as they are.
func withStreamedBody(req *http.Request) *http.Request {
	br, ok := req.Body.(*bodyReader)
	if !ok || req.GetBody != nil {
		return req
	}
	r := req.Clone(req.Context())
	r.ContentLength = br.body.size()
	r.GetBody = func() (io.ReadCloser, error) { return br.body.reader(), nil }
	return r
}
