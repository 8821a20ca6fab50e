package registry

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"syscall"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// ErrCorrupt is matched by the *CorruptError of a registry file that is not
// a whole bbolt database: truncated, overwritten, bit-flipped, or empty.
var ErrCorrupt = errors.New("registry file is corrupt")

// CorruptError says that the registry file at Path cannot be read as a
// registry, why, and the way out.
type CorruptError struct {
	Path  string
	Cause string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("registry file %s is corrupt (%s): restore it from a backup, or move it aside and run `syncjob sync --full` to rebuild it from the repository",
		e.Path, e.Cause)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// guarded runs fn, which reads the memory-mapped file, turning what a
// damaged file makes bbolt do — panic on a page it cannot make sense of, or
// fault reading past the end of a truncated file (which SetPanicOnFault
// turns into a panic of this goroutine) — into a *CorruptError.
func (b *Bolt) guarded(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = &CorruptError{Path: b.path, Cause: fmt.Sprintf("unreadable page: %v", p)}
		}
	}()
	return fn()
}

// openDB opens the file with bbolt and checks that it holds every page its
// meta page counts; file is the descriptor bbolt opened (see abandon). A
// file that exists but is empty is corrupt: bbolt would silently make it a
// new, empty registry. Errors of the file system (not found, permission,
// busy) are returned as they are.
func (b *Bolt) openDB() (db *bolt.DB, file *os.File, err error) {
	fi, err := os.Stat(b.path)
	switch {
	case err == nil && fi.Size() == 0:
		return nil, nil, &CorruptError{Path: b.path, Cause: "the file is empty"}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, nil, fmt.Errorf("bolt: open registry file %s: %w", b.path, err)
	}
	opts := &bolt.Options{Timeout: opTimeout, ReadOnly: b.readOnly, OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag, perm)
		file = f
		return f, err
	}}
	err = b.guarded(func() (err error) {
		if db, err = bolt.Open(b.path, 0o600, opts); err != nil {
			return err
		}
		return db.View(func(tx *bolt.Tx) error { return b.checkSize(tx) })
	})
	if err == nil {
		return db, file, nil
	}
	b.abandon(db, file)
	return nil, nil, b.openError(err)
}

// openError says what went wrong opening the file: damage (a *CorruptError),
// or the file system's or another process's doing.
func (b *Bolt) openError(err error) error {
	var corrupt *CorruptError
	switch {
	case errors.As(err, &corrupt):
		return err
	case errors.Is(err, berrors.ErrTimeout):
		// in use, as by another writer: the command fails (exit 1), it is
		// no setting's fault (an adversarial helper found it exit 2)
		return fmt.Errorf("bolt: registry file %s: another process kept it busy for %s: %w (%w)", b.path, opTimeout, ErrInUse, err)
	case isSystemError(err):
		return fmt.Errorf("bolt: open registry file %s: %w", b.path, err)
	}
	// bbolt's own checks: a bad magic, version or checksum of both meta
	// pages, a file shorter than two pages.
	return &CorruptError{Path: b.path, Cause: err.Error()}
}

// checkSize fails when the file is shorter than the pages its meta page
// counts (a truncated file, which bbolt would read past its end).
func (b *Bolt) checkSize(tx *bolt.Tx) error {
	fi, err := os.Stat(b.path)
	if err != nil {
		return fmt.Errorf("bolt: open registry file %s: %w", b.path, err)
	}
	if need := tx.Size(); fi.Size() < need {
		return &CorruptError{Path: b.path, Cause: fmt.Sprintf("truncated: %d bytes, its pages need %d", fi.Size(), need)}
	}
	return nil
}

// isSystemError reports whether err comes from the file system or the
// kernel (open, lock, map) rather than from bbolt reading the file.
func isSystemError(err error) bool {
	var pathErr *fs.PathError
	var errno syscall.Errno
	return errors.As(err, &pathErr) || errors.As(err, &errno)
}

// abandon lets go of a database that failed to open or that a panic left
// behind: its file is unlocked and closed at once, so this process may open
// the file again (a map of it that bbolt could not undo keeps the file
// open, and would keep it locked), and the database is closed in the
// background, since bbolt may still hold one of its own locks and closing
// would then wait forever. A nil db or file is skipped.
func (b *Bolt) abandon(db *bolt.DB, file *os.File) {
	if file != nil {
		unlockFile(file)
		_ = file.Close()
	}
	if db == nil {
		return
	}
	go func() {
		defer func() { _ = recover() }()
		_ = db.Close()
	}()
}
