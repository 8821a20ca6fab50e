package registry

import "strings"

// strs keeps many small strings that live as long as one another (the
// names and versions of a full run's listing) in shared chunks: each is a
// slice of a chunk, not an allocation of its own rounded up to a size
// class, and not the listed key it was cut from (internal/github's strs
// does the same for the tree). A chunk is written once, in order, and never
// changed, so a string taken from it stays what it was.
type strs struct {
	chunk *strings.Builder // nil until the first string
}

// strsChunk is the size of one chunk; a longer string gets its own.
const strsChunk = 64 << 10

// copy returns a string equal to s from the current chunk.
func (c *strs) copy(s string) string {
	switch {
	case s == "":
		return ""
	case len(s) > strsChunk/4:
		return strings.Clone(s)
	}
	if c.chunk == nil || c.chunk.Cap()-c.chunk.Len() < len(s) {
		c.chunk = &strings.Builder{} // the strings taken keep the full chunk
		c.chunk.Grow(strsChunk)
	}
	start := c.chunk.Len()
	c.chunk.WriteString(s)
	return c.chunk.String()[start:]
}
