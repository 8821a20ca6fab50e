package strs

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/knue/syncjob/internal/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// follows says whether b begins where a ends, in memory.
func follows(a, b string) bool {
	return uintptr(unsafe.Pointer(unsafe.StringData(a)))+uintptr(len(a)) == uintptr(unsafe.Pointer(unsafe.StringData(b)))
}

func TestStrs_LongStringsAndEmpty(t *testing.T) {
	t.Parallel()
	var s Chunks
	long := string(bytes.Repeat([]byte("x"), ChunkSize))
	if got := s.Join(long, "y"); got != long+"y" {
		t.Errorf("long string: %d bytes, want %d", len(got), len(long)+1)
	}
	if got := s.Join("", ""); got != "" {
		t.Errorf("empty: %q", got)
	}
	a, b := s.Join("ab", "c"), s.Join("d", "")
	if a != "abc" || b != "d" || !follows(a, b) {
		t.Errorf("got %q and %q, want abc and d in one chunk", a, b)
	}
}

// Copy is Join with nothing after: a copy in the chunk, not the string
// it was given.
func TestStrs_CopyIsInTheChunk(t *testing.T) {
	t.Parallel()
	var s Chunks
	key := "queue:규정/정책"
	name := key[len("queue:"):]
	got := s.Copy(name)
	if got != name || unsafe.StringData(got) == unsafe.StringData(name) {
		t.Errorf("Copy(%q) = %q, the given string's bytes: want a copy", name, got)
	}
	if next := s.Copy("sha"); !follows(got, next) {
		t.Error("two copies not one after the other in one chunk")
	}
	if s.Copy("") != "" {
		t.Error("empty copy not empty")
	}
}

func TestStrs_Holds(t *testing.T) {
	t.Parallel()
	var s Chunks
	if s.Holds("x") {
		t.Error("an empty Chunks holds a string")
	}
	got := s.Copy("abc")
	if !s.Holds(got) || !s.Holds(got[1:]) || s.Holds("abc") || s.Holds(string([]byte{'a'})) {
		t.Error("Holds: want true for the copy and its parts, false for strings made elsewhere")
	}
}
