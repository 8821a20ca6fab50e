package githubtest

import (
	"bytes"
	"compress/zlib"
	"io"
	"strings"
	"testing"
)

// TestAppendStoredZlib_AsStoredZlibWrites checks the object file written
// whole is the one the streamed writer writes, and a zlib stream of header
// and content, at the sizes around a stored block's.
func TestAppendStoredZlib_AsStoredZlibWrites(t *testing.T) {
	t.Parallel()
	header := objectHeader("blob", 0)
	for _, size := range []int{0, 1, 100, maxStored - len(header) - 1, maxStored - len(header), maxStored - len(header) + 1, 2*maxStored - len(header), 2*maxStored + 7} {
		content := []byte(strings.Repeat("0123456789abcdef", size/16+1)[:size])
		header := objectHeader("blob", int64(size))
		var want bytes.Buffer
		z := newStoredZlib(&want, int64(len(header)+size))
		z.Write(header)
		z.Write(content)
		if err := z.Close(); err != nil {
			t.Fatal(err)
		}
		got := appendStoredZlib([]byte("kept"), header, content)
		if !bytes.Equal(got[:4], []byte("kept")) || !bytes.Equal(got[4:], want.Bytes()) {
			t.Fatalf("size %d: appendStoredZlib differs from storedZlib", size)
		}
		zr, err := zlib.NewReader(bytes.NewReader(got[4:]))
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		inflated, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(inflated, append(header, content...)) {
			t.Fatalf("size %d: inflated %d bytes (%v), want header and content", size, len(inflated), err)
		}
	}
}
