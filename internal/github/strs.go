package github

import "strings"

// strs keeps many small strings that live as long as one another (the
// paths and shas of a tree's files, their titles) in shared chunks: each
// is a slice of a chunk, not an allocation of its own rounded up to a size
// class. At 200,000 files a path and a sha of their own took 126 bytes a
// file (docs/bench.md, "Memory, third pass"). A chunk is written once, in
// order, and never changed, so a string taken from it stays what it was.
type strs struct {
	chunk *strings.Builder // nil until the first string
}

// strsChunk is the size of one chunk; a longer string gets its own.
const strsChunk = 64 << 10

// join returns a string equal to a+b (b may be empty) from the current
// chunk.
func (s *strs) join(a, b string) string {
	n := len(a) + len(b)
	if n == 0 {
		return ""
	}
	if n > strsChunk/4 {
		return a + b
	}
	if s.chunk == nil || s.chunk.Cap()-s.chunk.Len() < n {
		s.chunk = &strings.Builder{} // the strings taken keep the full chunk
		s.chunk.Grow(strsChunk)
	}
	start := s.chunk.Len()
	s.chunk.WriteString(a)
	s.chunk.WriteString(b)
	return s.chunk.String()[start:]
}
