//go:build !windows && !plan9 && !solaris && !aix && !android

package registry

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// On Unix the lock file is held with flock(2): the kernel lets go of it
// when its process ends, so a crashed writer leaves no stale lock.

// tryLock takes the lock file at path for me without waiting. When another
// writer holds it, it returns that writer (nil if unknown) and no lock.
func tryLock(path string, me BoltWriter) (*writerLock, *BoltWriter, error) {
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			holder := readHolder(f)
			_ = f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, holder, nil
			}
			return nil, nil, err
		}
		// The writer before may have removed the file as it let go, after
		// this one opened it: the lock is then on a file no one else sees.
		if !stillAt(f, path) {
			_ = f.Close()
			continue
		}
		if err := writeHolder(f, me); err != nil {
			_ = f.Close()
			return nil, nil, err
		}
		return &writerLock{f: f, path: path}, nil, nil
	}
}

func stillAt(f *os.File, path string) bool {
	held, err := f.Stat()
	if err != nil {
		return false
	}
	now, err := os.Stat(path)
	return err == nil && os.SameFile(held, now)
}

// release removes the lock file, then lets go of it, so that a writer
// waiting on it sees that it is gone and takes a new one.
func (l *writerLock) release() error {
	rmErr := os.Remove(l.path)
	if err := l.f.Close(); err != nil {
		return err
	}
	if rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
		return rmErr
	}
	return nil
}

// lockHolder returns the writer that holds the lock file of dbPath, nil
// when none does.
func lockHolder(dbPath string) (*BoltWriter, error) {
	f, err := os.Open(lockPath(dbPath))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		if w := readHolder(f); w != nil {
			return w, nil
		}
		return &BoltWriter{Host: "unknown host"}, nil
	}
	return nil, err // a shared lock taken: no writer; closing lets go
}

// unlockFile lets go of the lock bbolt holds on its database file f.
func unlockFile(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
