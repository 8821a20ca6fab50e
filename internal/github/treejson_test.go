package github

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// treeDoc is a trees answer of n entries made as it is read, so that the
// test holds no more of it than the decoder asks for; read counts the
// bytes handed out, ends[i] is where entry i ends in the document.
type treeDoc struct {
	n, next   int
	pending   []byte
	read      int
	made      int
	ends      []int
	closed    bool
	truncated bool
}

const treeDocHead = `{"sha":"0123456789abcdef0123456789abcdef01234567","url":"https://api.github.com/repos/o/r/git/trees/0123456789abcdef0123456789abcdef01234567","tree":[`

func treeDocEntry(i int) string {
	sha := fmt.Sprintf("%040x", i)
	if i%10 == 9 {
		return fmt.Sprintf(`{"path":"규정/폴더 %06d","mode":"040000","type":"tree","sha":"%s","url":"https://api.github.com/repos/o/r/git/trees/%s"}`, i, sha, sha)
	}
	return fmt.Sprintf(`{"path":"규정/파일 %06d.md","mode":"100644","type":"blob","sha":"%s","size":%d,"url":"https://api.github.com/repos/o/r/git/blobs/%s"}`, i, sha, i, sha)
}

func (d *treeDoc) Read(p []byte) (int, error) {
	for len(d.pending) < len(p) && !d.closed {
		var s string
		switch {
		case d.made == 0:
			s = treeDocHead
		case d.next < d.n:
			s = treeDocEntry(d.next)
			if d.next > 0 {
				s = "," + s
			}
			d.ends = append(d.ends, d.made+len(s))
			d.next++
		default:
			s = fmt.Sprintf(`],"truncated":%t}`, d.truncated)
			d.closed = true
		}
		d.pending = append(d.pending, s...)
		d.made += len(s)
	}
	if len(d.pending) == 0 {
		return 0, io.EOF
	}
	n := copy(p, d.pending)
	d.pending = d.pending[n:]
	d.read += n
	return n, nil
}

// TestDecodeTree_HoldsOneEntryAtATime_NotTheDocument decodes a trees answer
// of 5,000 entries (over 1 MB) from a reader and checks, as each entry
// arrives, that the decoder has read at most 64 KiB past it: the document
// is never held whole (go-github's GetTree, a json.Decoder.Decode of the
// answer, reads all of it before the first entry).
func TestDecodeTree_HoldsOneEntryAtATime_NotTheDocument(t *testing.T) {
	t.Parallel()
	const n, slack = 5000, 64 << 10
	doc := &treeDoc{n: n, truncated: true}
	var got []treeEntry
	truncated, err := decodeTree(doc, func(e treeEntry) {
		through := doc.ends[len(got)]
		if doc.read > through+slack {
			t.Fatalf("entry %d: %d bytes read, %d through the entry: the decoder reads ahead of its entries", len(got), doc.read, through)
		}
		got = append(got, e)
	})
	if err != nil {
		t.Fatal(err)
	}
	if doc.read != doc.made || doc.read < 1<<20 {
		t.Fatalf("read %d bytes of %d, want the whole document, over 1 MiB", doc.read, doc.made)
	}
	if !truncated {
		t.Error("truncated = false, want true")
	}
	if len(got) != n {
		t.Fatalf("%d entries, want %d", len(got), n)
	}
	want := []treeEntry{
		{Path: "규정/파일 000000.md", Mode: "100644", Type: "blob", SHA: fmt.Sprintf("%040x", 0), Size: 0},
		{Path: "규정/파일 000008.md", Mode: "100644", Type: "blob", SHA: fmt.Sprintf("%040x", 8), Size: 8},
		{Path: "규정/폴더 000009", Mode: "040000", Type: "tree", SHA: fmt.Sprintf("%040x", 9), Size: -1},
	}
	if diff := cmp.Diff(want, []treeEntry{got[0], got[8], got[9]}); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

func TestDecodeTree_AnyFieldOrder_NullTree_BadShapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		doc       string
		want      []treeEntry
		truncated bool
		err       bool
	}{
		{doc: `{"truncated":true,"tree":[{"path":"a.md","type":"blob","mode":"100755","sha":"s","size":3,"extra":{"x":[1]}}],"sha":"t"}`,
			want: []treeEntry{{Path: "a.md", Mode: "100755", Type: "blob", SHA: "s", Size: 3}}, truncated: true},
		{doc: `{"sha":"t","tree":null,"truncated":false}`},
		{doc: `{"sha":"t","tree":[]}`},
		{doc: `{"tree":{"path":"a"}}`, err: true},
		{doc: `[{"path":"a"}]`, err: true},
		{doc: `{"tree":[{"path":"a"}`, err: true},
	} {
		var got []treeEntry
		truncated, err := decodeTree(strings.NewReader(tc.doc), func(e treeEntry) { got = append(got, e) })
		if (err != nil) != tc.err {
			t.Errorf("%s: err = %v, want error %t", tc.doc, err, tc.err)
			continue
		}
		if tc.err {
			continue
		}
		if truncated != tc.truncated {
			t.Errorf("%s: truncated = %t, want %t", tc.doc, truncated, tc.truncated)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: entries (-want +got):\n%s", tc.doc, diff)
		}
	}
}
