// Package strs keeps many small strings that live as long as one another
// (a tree's paths and shas, a listing's names and versions, titles) in
// shared chunks: each is a slice of a chunk, not an allocation of its own
// rounded up to a size class, and not the larger string it was cut from.
// At 200,000 files a path and a sha of their own took 126 bytes a file
// (docs/bench.md, "How we got here", "Memory, third pass"). A chunk is
// written once, in order, and never changed, so a string taken from it
// stays what it was.
package strs

import (
	"strings"
	"unsafe"
)

// Chunks hands out strings from shared chunks; the zero value is ready.
type Chunks struct {
	chunk *strings.Builder // nil until the first string
}

// ChunkSize is the size of one chunk; a string over a quarter of it gets
// its own allocation.
const ChunkSize = 64 << 10

// Copy returns a string equal to s from the current chunk.
func (c *Chunks) Copy(s string) string { return c.Join(s, "") }

// Join returns a string equal to a+b (b may be empty) from the current
// chunk.
func (c *Chunks) Join(a, b string) string {
	n := len(a) + len(b)
	if n == 0 {
		return ""
	}
	if n > ChunkSize/4 {
		return a + b
	}
	if c.chunk == nil || c.chunk.Cap()-c.chunk.Len() < n {
		c.chunk = &strings.Builder{} // the strings taken keep the full chunk
		c.chunk.Grow(ChunkSize)
	}
	start := c.chunk.Len()
	c.chunk.WriteString(a)
	c.chunk.WriteString(b)
	return c.chunk.String()[start:]
}

// Holds reports whether s lies within the current chunk (a test's way to
// see that a string was taken from it).
func (c *Chunks) Holds(s string) bool {
	if c.chunk == nil || len(s) == 0 {
		return false
	}
	all := c.chunk.String()
	lo, p := uintptr(unsafe.Pointer(unsafe.StringData(all))), uintptr(unsafe.Pointer(unsafe.StringData(s)))
	return p >= lo && p+uintptr(len(s)) <= lo+uintptr(len(all))
}
