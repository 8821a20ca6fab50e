package githubtest

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"hash/adler32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A commit is written here, object by object, as git would write it: the
// blobs of the work tree, its trees and the commit, as loose objects, and the
// branch's ref file. A git process costs milliseconds of CPU, and the tests
// of a package make thousands of commits with `git add` and `git commit`.
// The shas are git's (TestCommit_SameShasAsGit builds the same history both
// ways).
//
// git's index is not updated: after such a commit it still holds the commit
// before (indexStale), and is brought to HEAD before the next git command
// that reads it (see Git). A test that stages by hand (Git add,
// update-index, rm, mv, commit; Submodule) has its later commits made by git
// (viaGit), which keeps what it staged.

// noIndex are the git commands Git runs without bringing the index to HEAD:
// they do not read it.
var noIndex = map[string]bool{"hash-object": true, "update-ref": true, "branch": true, "symbolic-ref": true, "fetch": true, "tag": true, "config": true}

// staging are the git commands that stage by hand: once one runs, Commit
// leaves staging to git.
var staging = map[string]bool{"add": true, "update-index": true, "rm": true, "mv": true, "commit": true, "read-tree": true, "apply": true}

// beforeGit prepares the index for a git command that may change the
// repository (see Git).
func (r *Repo) beforeGit(verb string) error {
	r.mu.Lock()
	if staging[verb] {
		r.viaGit = true
	}
	stale := r.indexStale && !noIndex[verb]
	if stale {
		r.indexStale = false
	}
	r.mu.Unlock()
	if !stale {
		return nil
	}
	_, err := r.git(nil, "reset", "-q") // the index to HEAD; the work tree stays
	return err
}

// stableAfter is how long a file must have been unchanged before it was
// hashed for its hash to be reused while its size, mtime, inode and mode
// stay the same: a write after the hash then gives it a later mtime, even
// on a file system with coarse timestamps.
const stableAfter = time.Second

// hashed is a work-tree file's blob id and the file's state when hashed.
type hashed struct {
	size  int64
	mtime time.Time
	inode uint64
	mode  fs.FileMode
	id    string
	at    time.Time
}

// writeCommit commits the work tree on top of HEAD with msg, dated as the
// repository's next commit, and returns its id.
func (r *Repo) writeCommit(msg string) (string, error) {
	refFile, parent, err := r.headRef()
	if err != nil {
		return "", err
	}
	tree, err := r.writeTree(r.dir, true)
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	when := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.commits) * time.Second).Unix()
	r.mu.Unlock()
	var body bytes.Buffer
	fmt.Fprintf(&body, "tree %s\n", tree)
	if parent != "" {
		fmt.Fprintf(&body, "parent %s\n", parent)
	}
	fmt.Fprintf(&body, "author githubtest <githubtest@example.invalid> %d +0000\ncommitter githubtest <githubtest@example.invalid> %d +0000\n\n%s", when, when, cleanMessage(msg))
	id, err := r.writeObject("commit", body.Bytes())
	if err != nil {
		return "", err
	}
	if err := writeFileAtomic(refFile, []byte(id+"\n")); err != nil {
		return "", err
	}
	r.mu.Lock()
	r.reads, r.indexStale = nil, true
	r.mu.Unlock()
	return id, nil
}

// headRef is the file HEAD's commit is kept in (the branch's ref file, or
// HEAD itself when detached) and that commit ("" before the first).
func (r *Repo) headRef() (file, commit string, err error) {
	git := filepath.Join(r.dir, ".git")
	if _, err := os.Lstat(filepath.Join(git, "packed-refs")); err == nil {
		return "", "", fmt.Errorf("packed refs: not written here")
	}
	file = filepath.Join(git, "HEAD")
	b, err := os.ReadFile(file)
	if err != nil {
		return "", "", err
	}
	if ref, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "ref: "); ok {
		file = filepath.Join(git, filepath.FromSlash(ref))
		if b, err = os.ReadFile(file); os.IsNotExist(err) {
			return file, "", nil
		} else if err != nil {
			return "", "", err
		}
	}
	commit = strings.TrimSpace(string(b))
	if !objectID.MatchString(commit) || len(commit) != 40 {
		return "", "", fmt.Errorf("HEAD: %q is not a commit id", commit)
	}
	return file, commit, nil
}

// cleanMessage is msg as `git commit -m` keeps it: trailing blanks cut from
// each line, blank lines at either end dropped, runs of them made one.
func cleanMessage(msg string) string {
	var out []string
	blank := false
	for line := range strings.SplitSeq(msg, "\n") {
		line = strings.TrimRight(line, " \t\r\v\f")
		if line == "" {
			blank = len(out) > 0
			continue
		}
		if blank {
			out = append(out, "")
			blank = false
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n") + "\n"
}

type treeItem struct {
	mode, name, id string
}

// writeTree writes the tree of the folder dir (the work tree without .git
// when root) and returns its id, or "" for a folder git would not record
// (nothing in it but empty folders).
func (r *Repo) writeTree(dir string, root bool) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var items []treeItem
	for _, e := range entries {
		if root && e.Name() == ".git" {
			continue
		}
		path := filepath.Join(dir, e.Name())
		item, err := r.treeEntry(path, e)
		if err != nil {
			return "", err
		}
		if item.id != "" {
			items = append(items, item)
		}
	}
	if len(items) == 0 && !root {
		return "", nil
	}
	// git orders a tree's entries by name, a folder's as if it ended in "/"
	key := func(it treeItem) string {
		if it.mode == "40000" {
			return it.name + "/"
		}
		return it.name
	}
	sort.Slice(items, func(i, j int) bool { return key(items[i]) < key(items[j]) })
	var body bytes.Buffer
	for _, it := range items {
		raw, _ := hex.DecodeString(it.id)
		fmt.Fprintf(&body, "%s %s\x00%s", it.mode, it.name, raw)
	}
	return r.writeObject("tree", body.Bytes())
}

// treeEntry is the tree entry of one work-tree path (no id: nothing to record).
func (r *Repo) treeEntry(path string, e fs.DirEntry) (treeItem, error) {
	item := treeItem{name: e.Name()}
	info, err := e.Info()
	if err != nil {
		return item, err
	}
	switch mode := info.Mode(); {
	case mode.IsDir():
		item.mode = "40000"
		item.id, err = r.writeTree(path, false)
	case mode&fs.ModeSymlink != 0:
		var target string
		if target, err = os.Readlink(path); err == nil {
			item.mode = "120000"
			item.id, err = r.writeObject("blob", []byte(target))
		}
	case mode.IsRegular():
		item.mode = "100644"
		if mode&0o100 != 0 {
			item.mode = "100755"
		}
		item.id, err = r.writeBlob(path, info)
	}
	return item, err
}

// writeBlob writes the blob of the regular file at path, hashing it again
// only when it may have changed since it was last hashed.
func (r *Repo) writeBlob(path string, info fs.FileInfo) (string, error) {
	now := hashed{size: info.Size(), mtime: info.ModTime(), inode: inode(info), mode: info.Mode()}
	r.mu.Lock()
	was, ok := r.hashes[path]
	r.mu.Unlock()
	if ok && was.size == now.size && was.mtime.Equal(now.mtime) && was.inode == now.inode && was.mode == now.mode && was.mtime.Before(was.at.Add(-stableAfter)) {
		return was.id, nil
	}
	now.at = time.Now()
	var id string
	var err error
	if now.size > bigBlob {
		id, err = r.hashObject(path)
	} else {
		id, err = r.writeObjectFrom("blob", path, now.size)
	}
	if err != nil {
		return "", err
	}
	now.id = id
	r.mu.Lock()
	if r.hashes == nil {
		r.hashes = make(map[string]hashed)
	}
	r.hashes[path] = now
	r.mu.Unlock()
	return id, nil
}

// bigBlob is the size over which git writes a blob: one process costs less
// than hashing and copying megabytes under the race detector.
const bigBlob = 4 << 20

// hashObject writes the blob of the file at path with git, uncompressed.
func (r *Repo) hashObject(path string) (string, error) {
	out, err := r.git(nil, "-c", "core.looseCompression=0", "hash-object", "-w", "--no-filters", "--", path)
	return strings.TrimSpace(string(out)), err
}

// writeObject writes a loose object of kind holding content, unless the
// repository has it, and returns its id.
func (r *Repo) writeObject(kind string, content []byte) (string, error) {
	h := objectHash(kind, int64(len(content)))
	h.Write(content)
	id := hex.EncodeToString(h.Sum(nil))
	if err := r.writeLooseBytes(id, kind, content); err != nil {
		return "", err
	}
	remember(id, kind, len(content), content)
	return id, nil
}

// smallObject is the size up to which writeObjectFrom reads a file once,
// whole, into a reused buffer; a larger one is read twice, streamed.
const smallObject = 1 << 20

// buffers are the reused buffers of writeObjectFrom and writeLooseBytes:
// under the race detector every fresh buffer costs its shadow memory.
var buffers = sync.Pool{New: func() any { return new([]byte) }}

// writeObjectFrom is writeObject for the size bytes of the file at path,
// never held whole when larger than smallObject (then read twice: to hash,
// then to write if new).
func (r *Repo) writeObjectFrom(kind, path string, size int64) (string, error) {
	if size <= smallObject {
		return r.writeSmallFrom(kind, path, size)
	}
	copyFile := func(w io.Writer) error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		n, err := io.Copy(w, f)
		if err == nil && n != size {
			err = changedWhileCommitted(path, n, size)
		}
		return err
	}
	h := objectHash(kind, size)
	if err := copyFile(h); err != nil {
		return "", err
	}
	id := hex.EncodeToString(h.Sum(nil))
	return id, r.writeLoose(id, kind, size, copyFile)
}

// writeSmallFrom is writeObjectFrom for a file of at most smallObject
// bytes, read once into a reused buffer.
func (r *Repo) writeSmallFrom(kind, path string, size int64) (string, error) {
	buf := buffers.Get().(*[]byte)
	defer buffers.Put(buf)
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	// one byte more than expected: a file that grew shows as one
	if int64(cap(*buf)) < size+1 {
		*buf = make([]byte, size+1)
	}
	n, err := io.ReadFull(f, (*buf)[:size+1])
	if err != io.ErrUnexpectedEOF && err != io.EOF && err != nil {
		return "", err
	}
	if int64(n) != size {
		return "", changedWhileCommitted(path, int64(n), size)
	}
	content := (*buf)[:n]
	h := objectHash(kind, size)
	h.Write(content)
	id := hex.EncodeToString(h.Sum(nil))
	if err := r.writeLooseBytes(id, kind, content); err != nil {
		return "", err
	}
	remember(id, kind, n, nil) // the buffer is reused
	return id, nil
}

func changedWhileCommitted(path string, n, size int64) error {
	return fmt.Errorf("%s: read %d bytes, want %d: changed while committed", path, n, size)
}

// objectHeader is a git object's header: "blob 12\x00".
func objectHeader(kind string, size int64) []byte {
	return append(strconv.AppendInt(append([]byte(kind), ' '), size, 10), 0)
}

// objectHash is a hash of an object's header, ready for its content.
func objectHash(kind string, size int64) hash.Hash {
	h := sha1.New()
	h.Write(objectHeader(kind, size))
	return h
}

// looseFile is the file of loose object id; ok is false when it exists.
func (r *Repo) looseFile(id string) (file string, ok bool, err error) {
	dir := filepath.Join(r.dir, ".git", "objects", id[:2])
	file = filepath.Join(dir, id[2:])
	if _, err := os.Stat(file); err == nil {
		return file, false, nil
	}
	r.mu.Lock()
	made := r.objectDirs[id[:2]]
	r.mu.Unlock()
	if made {
		return file, true, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, err
	}
	r.mu.Lock()
	if r.objectDirs == nil {
		r.objectDirs = make(map[string]bool)
	}
	r.objectDirs[id[:2]] = true
	r.mu.Unlock()
	return file, true, nil
}

// writeLoose writes object id (its header, then what content writes) as
// git's loose object file, unless it exists.
func (r *Repo) writeLoose(id, kind string, size int64, content func(io.Writer) error) error {
	file, ok, err := r.looseFile(id)
	if !ok || err != nil {
		return err
	}
	return replaceFile(file, func(f io.Writer) error {
		header := objectHeader(kind, size)
		z := newStoredZlib(f, int64(len(header))+size)
		_, err := z.Write(header)
		if err == nil {
			err = content(z)
		}
		if err == nil {
			err = z.Close()
		}
		if err != nil {
			return fmt.Errorf("write object %s: %w", id, err)
		}
		return nil
	})
}

// writeLooseBytes is writeLoose for content held whole: the object file,
// as storedZlib would write it, made in a reused buffer and written at once.
func (r *Repo) writeLooseBytes(id, kind string, content []byte) error {
	file, ok, err := r.looseFile(id)
	if !ok || err != nil {
		return err
	}
	buf := buffers.Get().(*[]byte)
	defer buffers.Put(buf)
	*buf = appendStoredZlib((*buf)[:0], objectHeader(kind, int64(len(content))), content)
	return replaceFile(file, func(f io.Writer) error {
		if _, err := f.Write(*buf); err != nil {
			return fmt.Errorf("write object %s: %w", id, err)
		}
		return nil
	})
}

// replaceFile writes file through a temporary file renamed onto it: a
// reader never sees it half written.
func replaceFile(file string, write func(io.Writer) error) error {
	tmp := file + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, file)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// appendStoredZlib appends to dst the zlib stream storedZlib writes of
// header and content: stored blocks of maxStored bytes, the last one
// marked final, then the checksum.
func appendStoredZlib(dst, header, content []byte) []byte {
	total := len(header) + len(content)
	sum := adler32.New()
	sum.Write(header)
	sum.Write(content)
	dst = append(dst, 0x78, 0x01)
	for start := 0; start < total; start += maxStored {
		n := min(total-start, maxStored)
		final := byte(0)
		if start+n == total {
			final = 1
		}
		dst = append(dst, final, byte(n), byte(n>>8), ^byte(n), ^byte(n>>8))
		dst = appendRange(dst, header, content, start, start+n)
	}
	return binary.BigEndian.AppendUint32(dst, sum.Sum32())
}

// appendRange appends bytes from to to of header followed by content.
func appendRange(dst, header, content []byte, from, to int) []byte {
	if from < len(header) {
		dst = append(dst, header[from:min(to, len(header))]...)
		from = len(header)
	}
	if to > from {
		dst = append(dst, content[from-len(header):to-len(header)]...)
	}
	return dst
}

// storedZlib writes a zlib stream of stored (uncompressed) deflate blocks:
// a valid loose object that costs a copy, where compress/zlib's writer
// costs its tables for every object.
type storedZlib struct {
	w     io.Writer
	block []byte
	sum   hash.Hash32
	err   error
}

// maxStored is the most a stored deflate block holds.
const maxStored = 65535

func newStoredZlib(w io.Writer, total int64) *storedZlib {
	z := &storedZlib{w: w, block: make([]byte, 0, min(total, maxStored)), sum: adler32.New()}
	_, z.err = w.Write([]byte{0x78, 0x01}) // deflate, 32K window, no dictionary
	return z
}

func (z *storedZlib) Write(p []byte) (int, error) {
	z.sum.Write(p)
	n := len(p)
	for len(p) > 0 && z.err == nil {
		if len(z.block) == maxStored {
			z.flush(false)
		}
		k := min(len(p), maxStored-len(z.block))
		z.block = append(z.block, p[:k]...)
		p = p[k:]
	}
	return n, z.err
}

func (z *storedZlib) flush(final bool) {
	if z.err != nil {
		return
	}
	head := []byte{0, byte(len(z.block)), byte(len(z.block) >> 8), ^byte(len(z.block)), ^byte(len(z.block) >> 8)}
	if final {
		head[0] = 1
	}
	if _, z.err = z.w.Write(head); z.err == nil {
		_, z.err = z.w.Write(z.block)
	}
	z.block = z.block[:0]
}

// Close ends the stream with its last block and checksum.
func (z *storedZlib) Close() error {
	z.flush(true)
	if z.err == nil {
		_, z.err = z.w.Write(binary.BigEndian.AppendUint32(nil, z.sum.Sum32()))
	}
	return z.err
}

// writeFileAtomic replaces file with content, creating its folder.
func writeFileAtomic(file string, content []byte) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	tmp := file + ".lock" // git's own lock file name: git refuses to update the ref meanwhile
	if err := os.WriteFile(tmp, content, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// BlobID is the blob id git gives content (git hash-object), without a git
// process.
func BlobID(content string) string {
	h := objectHash("blob", int64(len(content)))
	io.WriteString(h, content)
	return hex.EncodeToString(h.Sum(nil))
}
