package github

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"unsafe"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/strs"
)

// A listing keeps its files' paths and shas in shared chunks, each string
// right after the one before, not each in an allocation of its own
// (docs/bench.md, "How we got here", "Memory, third pass").
func TestListing_PathsAndSHAsShareChunks(t *testing.T) {
	t.Parallel()
	var l listing
	for i := range 1000 {
		l.add("policies/", treeEntry{Path: fmt.Sprintf("p%03d.md", i), Mode: "100644", Type: "blob", SHA: fmt.Sprintf("%040x", i), Size: 10}, nil)
	}
	l.add("", treeEntry{Path: "sub", Mode: "040000", Type: "tree", SHA: fmt.Sprintf("%040x", 1), Size: -1}, nil)
	if len(l.files) != 1000 {
		t.Fatalf("%d files, want 1000", len(l.files))
	}
	apart := 0
	for i, f := range l.files {
		if want := fmt.Sprintf("policies/p%03d.md", i); f.Path != want || f.SHA != fmt.Sprintf("%040x", i) {
			t.Fatalf("file %d: %q %q, want %q and its sha", i, f.Path, f.SHA, want)
		}
		if !follows(f.Path, f.SHA) {
			apart++
		}
		if i > 0 && !follows(l.files[i-1].SHA, f.Path) {
			apart++
		}
	}
	// 1000 files of 55 bytes (path and sha) fill one chunk of 64 KiB
	if apart > 1 {
		t.Errorf("%d of 1999 strings do not follow the one before: a string per allocation", apart)
	}
}

// follows says whether b begins where a ends, in memory.
func follows(a, b string) bool {
	return uintptr(unsafe.Pointer(unsafe.StringData(a)))+uintptr(len(a)) == uintptr(unsafe.Pointer(unsafe.StringData(b)))
}

// An archive read hands each file on by the file's own path, not by the
// part of the entry's name after its top folder, which would keep every
// entry's whole name alive as long as the path is kept (a title's key).
func TestUntar_DeliversTheFilesOwnPath_NotTheEntrysName(t *testing.T) {
	t.Parallel()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	tw := tar.NewWriter(zw)
	var files []policy.File
	for i := range 3 {
		data := []byte(fmt.Sprintf("# Title %d\n", i))
		path := fmt.Sprintf("policies/p%d.md", i)
		h := sha1.Sum(append([]byte("blob "+strconv.Itoa(len(data))+"\x00"), data...))
		files = append(files, policy.File{Path: path, SHA: hex.EncodeToString(h[:]), Size: int64(len(data))})
		if err := tw.WriteHeader(&tar.Header{Name: "knue-policies-abc1234/" + path, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	want := newWantedFiles(files)
	got := map[string]string{}
	r := newReading(files, 1<<20, func(path string, _ int64, _ []byte) {
		for _, f := range files {
			if f.Path == path && unsafe.StringData(f.Path) != unsafe.StringData(path) {
				t.Errorf("%s handed on as a string of its own, not the file's path", path)
			}
		}
		got[path] = "read"
	})
	if err := untar(&gz, want, 1<<20, r); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(files) {
		t.Errorf("read %v, want all %d files", got, len(files))
	}
}

// The files to read stay in the caller's array when none is over the
// limit, nor read twice: a read of 200,000 files holds no second list of
// them. Otherwise the rest is a list of its own, and the caller's is left
// as it was.
func TestDeliverOversized_NoSecondListOfTheFiles(t *testing.T) {
	t.Parallel()
	var delivered []string
	put := func(path string, size int64, data []byte) {
		delivered = append(delivered, fmt.Sprint(path, size, data == nil))
	}
	small := []policy.File{{Path: "a.md", Size: 5}, {Path: "b.md", Size: -1}}
	if rest := newReading(small, 10, put).deliverOversized(distinct(small)); len(rest) != 2 || &rest[0] != &small[0] {
		t.Errorf("rest %v: want the files' own array", rest)
	}
	files := []policy.File{{Path: "a.md", Size: 5}, {Path: "big.md", Size: 50}, {Path: "b.md", Size: -1}, {Path: "a.md", Size: 5}}
	todo := distinct(files)
	r := newReading(todo, 10, put)
	rest := r.deliverOversized(todo)
	if len(rest) != 2 || rest[0].Path != "a.md" || rest[1].Path != "b.md" {
		t.Fatalf("rest %v, want a.md and b.md", rest)
	}
	if files[1].Path != "big.md" || files[3].Path != "a.md" {
		t.Errorf("the caller's files changed: %v", files)
	}
	if len(delivered) != 1 || delivered[0] != "big.md50 true" {
		t.Errorf("delivered %v, want big.md of 50 bytes without data", delivered)
	}
}

// The files an archive read looks for are found by path through their
// indexes sorted by path (no map of every path held through the download).
func TestWantedFiles_FindsEachByPath(t *testing.T) {
	t.Parallel()
	files := []policy.File{{Path: "b/z.md", SHA: "1"}, {Path: "a/y.md", SHA: "2"}, {Path: "c.md", SHA: "3"}, {Path: "a/x.md", SHA: "4"}}
	w := newWantedFiles(files)
	for _, f := range files {
		if got, ok := w.get(f.Path); !ok || got != f {
			t.Errorf("get(%q) = %v, %t; want %v", f.Path, got, ok, f)
		}
	}
	for _, path := range []string{"", "a", "a/x.mdx", "d.md", "b/z"} {
		if got, ok := w.get(path); ok {
			t.Errorf("get(%q) = %v, want none", path, got)
		}
	}
	if len(w.byPath) != len(files) {
		t.Errorf("%d indexes for %d files", len(w.byPath), len(files))
	}
}

// A read marks the files it delivered by index, not in a map of every
// path, and still hands each on once (an archive entry and a blob of the
// same file, or a path it was not asked for).
func TestReading_DeliversEachOnce_DoneByIndex(t *testing.T) {
	t.Parallel()
	files := []policy.File{{Path: "b.md"}, {Path: "a.md"}}
	var got []string
	r := newReading(files, 10, func(path string, _ int64, _ []byte) { got = append(got, path) })
	for _, path := range []string{"a.md", "a.md", "x.md", "b.md", "x.md", "b.md"} {
		r.deliver(path, 1, []byte("x"))
	}
	if fmt.Sprint(got) != "[a.md x.md b.md]" {
		t.Errorf("delivered %v, want a.md, x.md and b.md once each", got)
	}
	if !r.isDone("a.md") || !r.isDone("x.md") || r.isDone("c.md") {
		t.Error("isDone does not say what was delivered")
	}
	if len(r.done) != len(files) || len(r.more) != 1 {
		t.Errorf("done %v and more %v: want a mark per file and x.md alone by path", r.done, r.more)
	}
}

// TestTitleOf_TheNameItselfTakesNoBytes: a title that is the policy's
// name (its heading repeats the file's name, or it has none) is the name
// within the file's own path, not a copy; another title is a copy in the
// read's chunks, not a part of the file's bytes.
func TestTitleOf_TheNameItselfTakesNoBytes(t *testing.T) {
	t.Parallel()
	var titles strs.Chunks
	within := func(s, in string) bool {
		p, lo := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(in)))
		return p >= lo && p+uintptr(len(s)) <= lo+uintptr(len(in))
	}
	for _, c := range []struct {
		path, data, want string
		inPath           bool
	}{
		{"규정/학칙.md", "# 학칙\n\n본문", "학칙", true},
		{"규정/학칙.md", "본문만 있다", "학칙", true},
		{"규정/학칙.md", "\ufeff---\nx: 1\n---\n# 학칙  \r\n", "학칙", true},
		{"규정/학칙.md", "# 한국교원대학교 학칙\n", "한국교원대학교 학칙", false},
	} {
		data := []byte(c.data)
		got := titleOf(c.path, data, &titles)
		if got != c.want {
			t.Errorf("%q: title %q, want %q", c.data, got, c.want)
			continue
		}
		if within(got, c.path) != c.inPath {
			t.Errorf("%q: title within the path: %v, want %v", c.data, within(got, c.path), c.inPath)
		}
		if within(got, unsafe.String(&data[0], len(data))) || (!c.inPath && !titles.Holds(got)) {
			t.Errorf("%q: title %q is a part of the file's bytes, or not in the read's chunks", c.data, got)
		}
	}
}

// TestDistinctWanted_DuplicatesFoundInTheIndexByPath: a read's files
// without a second file of one path keep the first of each, in order; when
// none repeats, the read works in the caller's files and the index by path
// it found them with (no map of every path, no second index).
func TestDistinctWanted_DuplicatesFoundInTheIndexByPath(t *testing.T) {
	t.Parallel()
	files := []policy.File{{Path: "b.md", SHA: "1"}, {Path: "a.md", SHA: "2"}, {Path: "c.md", SHA: "3"}}
	todo, w := distinctWanted(files)
	if &todo[0] != &files[0] || len(todo) != 3 || &w.files[0] != &files[0] || len(w.byPath) != 3 {
		t.Errorf("no duplicate: files %v, index of %d: want the caller's files and their index", todo, len(w.byPath))
	}
	files = []policy.File{{Path: "b.md", SHA: "1"}, {Path: "a.md", SHA: "2"}, {Path: "b.md", SHA: "3"}, {Path: "c.md", SHA: "4"}, {Path: "a.md", SHA: "5"}, {Path: "b.md", SHA: "6"}}
	todo, w = distinctWanted(files)
	var got []string
	for _, f := range todo {
		got = append(got, f.Path+f.SHA)
	}
	if want := []string{"b.md1", "a.md2", "c.md4"}; !slices.Equal(got, want) {
		t.Errorf("distinct = %v, want %v (the first of each path, in order)", got, want)
	}
	for _, f := range todo {
		if g, ok := w.get(f.Path); !ok || g != f {
			t.Errorf("index: get(%q) = %v, %t; want %v", f.Path, g, ok, f)
		}
	}
	if files[2].SHA != "3" || len(files) != 6 {
		t.Errorf("the caller's files changed: %v", files)
	}
}
