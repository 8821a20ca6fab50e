package githubtest

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// looseObject reads object id from its loose file: its kind and size, and
// with content its bytes. ok is false when the repository has no loose
// object id (it may still be packed: git answers then).
func (r *Repo) looseObject(id string, content bool) (kind string, size int, data []byte, ok bool, err error) {
	if o, found := objects.Load(id); found && (!content || o.(*object).data != nil) && r.hasLoose(id) {
		o := o.(*object)
		if content {
			data = o.data
		}
		return o.kind, o.size, data, true, nil
	}
	kind, size, data, ok, err = r.readLoose(id, content)
	if ok && err == nil {
		remember(id, kind, size, data)
	}
	return kind, size, data, ok, err
}

// object is what an object id names, the same in every repository: its
// kind and size, and its bytes when small (nil otherwise, or not yet read).
type object struct {
	kind string
	size int
	data []byte
}

// objects are the objects read from or written as loose objects, by id;
// objectBytes counts the bytes they hold, at most maxObjectBytes.
var (
	objects     sync.Map // id → *object
	objectBytes atomic.Int64
)

// maxObjectData is the largest object whose bytes objects keeps, and
// maxObjectBytes all it keeps.
const (
	maxObjectData  = 64 << 10
	maxObjectBytes = 64 << 20
)

// remember keeps what id is in objects; data, nil when unknown, must not
// change after.
func remember(id, kind string, size int, data []byte) {
	if o, known := objects.Load(id); known && (data == nil || o.(*object).data != nil) {
		return
	}
	if data != nil && (len(data) > maxObjectData || objectBytes.Add(int64(len(data))) > maxObjectBytes) {
		data = nil
	}
	objects.Store(id, &object{kind: kind, size: size, data: data})
}

// readLoose is looseObject read from the file.
func (r *Repo) readLoose(id string, content bool) (kind string, size int, data []byte, ok bool, err error) {
	f, err := os.Open(filepath.Join(r.dir, ".git", "objects", id[:2], id[2:]))
	if err != nil {
		return "", 0, nil, false, nil
	}
	defer f.Close()
	z, err := zlib.NewReader(bufio.NewReaderSize(f, 4096))
	if err != nil {
		return "", 0, nil, false, fmt.Errorf("object %s: %w", id, err)
	}
	in := bufio.NewReaderSize(z, 512)
	header, err := in.ReadString(0)
	if err != nil {
		return "", 0, nil, false, fmt.Errorf("object %s: %w", id, err)
	}
	kind, n, found := strings.Cut(strings.TrimSuffix(header, "\x00"), " ")
	if size, err = strconv.Atoi(n); !found || err != nil {
		return "", 0, nil, false, fmt.Errorf("object %s: header %q", id, header)
	}
	if content {
		data = make([]byte, size)
		if _, err := io.ReadFull(in, data); err != nil {
			return "", 0, nil, false, fmt.Errorf("object %s: %w", id, err)
		}
	}
	return kind, size, data, true, nil
}

// looseAnswer answers from loose objects what batched would ask cat-file:
// name is a full id, or ID^{commit} / ID^{tree} to resolve. ok is false
// when git must answer (a packed object, a path, another kind).
func (r *Repo) looseAnswer(name string, content bool) (id, kind string, size int, data []byte, ok bool, err error) {
	if commit, path, found := strings.Cut(name, ":"); found {
		if id, ok, err = r.lookPath(commit, path); !ok || err != nil {
			return "", "", 0, nil, false, err
		}
		name = id
	}
	id, peel, _ := strings.Cut(name, "^")
	if len(id) != 40 || strings.Contains(id, ".") {
		return "", "", 0, nil, false, nil
	}
	switch peel {
	case "", "{commit}", "{tree}":
	default:
		return "", "", 0, nil, false, nil
	}
	kind, size, data, ok, err = r.looseObject(id, content || peel == "{tree}")
	if !ok || err != nil {
		return "", "", 0, nil, false, err
	}
	switch {
	case peel == "{commit}" && kind != "commit", peel == "{tree}" && kind != "commit" && kind != "tree":
		return "", "", 0, nil, false, nil // git says what is wrong
	case peel == "{tree}" && kind == "commit":
		tree, found := treeOf(data)
		if !found {
			return "", "", 0, nil, false, fmt.Errorf("commit %s: no tree", id)
		}
		return tree, "tree", 0, nil, true, nil
	}
	return id, kind, size, data, true, nil
}

// lookPath is the id of the entry at path in commit (a full id), walked
// down its loose trees; ok is false when git must answer (an object not
// loose, no such path, a path git would read otherwise).
func (r *Repo) lookPath(commit, path string) (string, bool, error) {
	if !isID(commit) || path == "" || strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/") || strings.Contains(path, "//") {
		return "", false, nil
	}
	kind, _, data, ok, err := r.looseObject(commit, true)
	if !ok || err != nil || kind != "commit" {
		return "", false, err
	}
	id, found := treeOf(data)
	if !found {
		return "", false, nil
	}
	for name := range strings.SplitSeq(path, "/") {
		kind, _, data, ok, err := r.looseObject(id, true)
		if !ok || err != nil || kind != "tree" {
			return "", false, err
		}
		if id, ok = treeEntryID(data, name); !ok {
			return "", false, nil
		}
	}
	return id, true, nil
}

// treeOf is the tree id of the commit object data (its first line).
func treeOf(commit []byte) (string, bool) {
	tree, found := bytes.CutPrefix(commit, []byte("tree "))
	if !found || len(tree) < 40 {
		return "", false
	}
	return string(tree[:40]), true
}

// treeEntryID is the id of the entry called name in the tree object data.
func treeEntryID(data []byte, name string) (string, bool) {
	entries, _ := parseTree(data)
	for _, e := range entries {
		if e.name == name {
			return e.id, true
		}
	}
	return "", false
}

// rawEntry is one entry of a tree object.
type rawEntry struct {
	mode     uint64
	name, id string
}

// parseTree reads the entries of the tree object data ("mode name\0" and
// 20 bytes of id each); ok is false when it is not one.
func parseTree(data []byte) (entries []rawEntry, ok bool) {
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		nul := bytes.IndexByte(data, 0)
		if sp < 0 || nul < sp || len(data) < nul+21 {
			return nil, false
		}
		mode, err := strconv.ParseUint(string(data[:sp]), 8, 32)
		if err != nil {
			return nil, false
		}
		entries = append(entries, rawEntry{mode: mode, name: string(data[sp+1 : nul]), id: hex.EncodeToString(data[nul+1 : nul+21])})
		data = data[nul+21:]
	}
	return entries, true
}
