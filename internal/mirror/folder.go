package mirror

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/knue/syncjob/internal/policy"
)

// Folder is a Target in a local folder: key k is the file {dir}/{k}. Each
// file is written to a temporary file in its folder, synced and renamed
// over the old one, so a reader sees the old file or the new one, never
// part of one. It keeps no metadata (see the package doc); List hashes each
// file, its MD5 standing for the ETag.
type Folder struct {
	dir    string
	prefix string
	count  counters
}

var _ Target = (*Folder)(nil)

// NewFolder returns a Folder target under dir for prefix. dir need not
// exist yet; it is created at the first Put.
func NewFolder(dir, prefix string) (*Folder, error) {
	if dir == "" {
		return nil, errors.New("folder: dir is empty")
	}
	if err := ValidatePrefix(prefix); err != nil {
		return nil, fmt.Errorf("folder: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("folder: resolve %s: %w", dir, err)
	}
	if err := canBeFolder(abs); err != nil {
		return nil, err
	}
	return &Folder{dir: abs, prefix: prefix}, nil
}

// canBeFolder checks that dir is a folder or can be made one: a file there,
// or above it where the folder would be made, is wrong configuration (exit
// 2 naming CONTENT_DIR), not a failed run. Other errors (permissions) are
// left to the first write, which names them.
func canBeFolder(dir string) error {
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.IsDir():
			return nil
		case err == nil:
			return &policy.ConfigError{Setting: "CONTENT_DIR", Problem: fmt.Sprintf("%s is a file, not a folder (want a folder, or a path where one can be made)", p)}
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return nil
		case filepath.Dir(p) == p:
			return nil
		}
	}
}

// Name implements Target.
func (f *Folder) Name() string { return "folder " + f.dir + ", prefix " + f.prefix }

// Stats implements Target.
func (f *Folder) Stats() Stats { return f.count.stats() }

// root is the folder that holds every key under the prefix.
func (f *Folder) root() string { return filepath.Join(f.dir, filepath.FromSlash(f.prefix)) }

func (f *Folder) path(key string) string { return filepath.Join(f.dir, filepath.FromSlash(key)) }

// Put implements Target.
func (f *Folder) Put(ctx context.Context, o Object) (string, error) {
	if err := validateObject(f.prefix, o); err != nil {
		return "", fmt.Errorf("folder: put: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("folder: put %s: %w", o.Key, err)
	}
	if err := f.noLinkOnTheWay(o.Key); err != nil {
		return "", fmt.Errorf("folder: put: %w", err)
	}
	if err := writeAtomic(f.path(o.Key), o.Body); err != nil {
		return "", fmt.Errorf("folder: put %s: %w", o.Key, translateFS(err))
	}
	f.count.puts.Add(1)
	f.count.bytes.Add(int64(len(o.Body)))
	return ETagOf(o.Body), nil
}

// writeAtomic writes body to a temporary file beside path, syncs it, and
// renames it over path, then syncs the folder so the rename lasts. The
// temporary files a killed write left beside path go first (isDebris).
func writeAtomic(path string, body []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	removeDebris(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	if _, err := tmp.Write(body); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

// isDebris says whether a file's name is one writeAtomic gives the
// temporary files of objects (".policy.md.tmp-123"): what a write killed before its
// rename leaves. It is no object: listed, it read as a foreign one, and
// eleven of them after a kill on a young mirror made the mass-delete guard
// refuse every run (an adversarial helper).
func isDebris(name string) bool {
	digits, ok := strings.CutPrefix(name, "."+ObjectName+".tmp-")
	return ok && digits != "" && strings.Trim(digits, "0123456789") == "" // a foreign ".notes.tmp-1" is listed (review)
}

// removeDebris removes the temporary files a killed write left beside
// path. Only the lease's run writes, one write a key at a time: none is
// another write's in flight.
func removeDebris(path string) {
	dir, prefix := filepath.Dir(path), "."+filepath.Base(path)+".tmp-"
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasPrefix(e.Name(), prefix) && isDebris(e.Name()) {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// Delete implements Target. A missing file counts as deleted; folders left
// empty are removed up to, not including, the prefix's folder.
func (f *Folder) Delete(ctx context.Context, keys []string) (map[string]error, error) {
	for _, k := range keys {
		if err := ValidateKey(f.prefix, k); err != nil {
			return nil, fmt.Errorf("folder: delete: %w", err)
		}
	}
	perKey := map[string]error{}
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			perKey[k] = err
			continue
		}
		if err := f.noLinkOnTheWay(k); err != nil {
			perKey[k] = fmt.Errorf("folder: delete: %w", err)
			continue
		}
		if err := os.Remove(f.path(k)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			perKey[k] = fmt.Errorf("folder: delete %s: %w", k, translateFS(err))
			continue
		}
		removeDebris(f.path(k)) // or its folder stays
		f.count.deletes.Add(1)
		f.removeEmptyParents(filepath.Dir(f.path(k)))
	}
	if err := ctx.Err(); err != nil {
		return perKey, fmt.Errorf("folder: delete: %w", err)
	}
	return perKey, nil
}

// noLinkOnTheWay fails (ErrOutsidePrefix) when a folder on the way from
// the prefix's folder to key's file is a symbolic link, which would lead
// the write or the delete outside the prefix; the key itself may be one
// (List reports a link as a foreign key, which Delete then removes, not
// what it points to). The dir and the prefix's folders are the operator's
// to place, links or not. Folders not made yet are fine. Someone who makes
// a link between this check and the write is not guarded against.
func (f *Folder) noLinkOnTheWay(key string) error {
	dir := f.root()
	parts := strings.Split(strings.TrimPrefix(key, f.prefix), "/")
	for _, part := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, part)
		fi, err := os.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			return translateFS(err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("key %q: %w: %s is a symbolic link", key, ErrOutsidePrefix, dir)
		}
	}
	return nil
}

// removeEmptyParents removes dir and its parents while they are empty and
// below the prefix's folder. A folder that is not empty stops it.
func (f *Folder) removeEmptyParents(dir string) {
	root := f.root()
	for dir != root && strings.HasPrefix(dir, root+string(filepath.Separator)) {
		if os.Remove(dir) != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}

// List implements Target: it walks the prefix's folder only, and reads each
// regular file to hash it. Anything else there (a symlink, a device) is
// listed with an empty ETag, so Drift takes it for foreign.
func (f *Folder) List(ctx context.Context) ([]Listed, error) {
	f.count.lists.Add(1)
	var out []Listed
	root := f.root()
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real // a prefix folder the operator made a link: walk where it leads (WalkDir does not)
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && isDebris(d.Name()) && strings.Count(filepath.ToSlash(rel), "/") == 1 {
			return nil // beside a policy's object, where writeAtomic puts them; elsewhere a foreign file (review)
		}
		l := Listed{Key: f.prefix + filepath.ToSlash(rel)}
		if d.Type().IsRegular() {
			l.ETag, l.Size, err = hashFile(path)
			if err != nil {
				return err
			}
		}
		out = append(out, l)
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) && len(out) == 0 {
		if _, serr := os.Stat(f.root()); errors.Is(serr, fs.ErrNotExist) {
			return nil, nil // nothing mirrored yet
		}
	}
	if err != nil {
		return nil, fmt.Errorf("folder: list %s: %w", f.prefix, translateFS(err))
	}
	slices.SortFunc(out, func(a, b Listed) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

func hashFile(path string) (string, int64, error) {
	file, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer file.Close()
	h := md5.New()
	n, err := io.Copy(h, file)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// translateFS turns the errors of a folder that takes no write at all into
// the store's: a permission error or a read-only file system is
// ErrAccessDenied (configuration: CONTENT_DIR), a full disk, a quota or an
// I/O error ErrUnavailable. The rest (a path's own: too long, not a
// folder) are kept as they are, that policy's.
func translateFS(err error) error {
	switch {
	case errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS):
		return fmt.Errorf("%w (CONTENT_DIR): %w", ErrAccessDenied, err)
	case errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EIO):
		return fmt.Errorf("%w (CONTENT_DIR): %w", ErrUnavailable, err)
	}
	return err
}
