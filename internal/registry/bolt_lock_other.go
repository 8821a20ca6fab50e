//go:build windows || plan9 || solaris || aix || android

package registry

import (
	"errors"
	"io/fs"
	"os"
)

// Where flock(2) is missing the lock file is created exclusively: a writer
// that crashed leaves it behind, and a person removes it (the InUseError
// names the holder to check first).

func tryLock(path string, me BoltWriter) (*writerLock, *BoltWriter, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		held, rerr := os.Open(path)
		if rerr != nil {
			return nil, nil, nil
		}
		defer held.Close()
		return nil, readHolder(held), nil
	}
	if err != nil {
		return nil, nil, err
	}
	if err := writeHolder(f, me); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return nil, nil, err
	}
	return &writerLock{f: f, path: path}, nil, nil
}

func (l *writerLock) release() error {
	cerr := l.f.Close()
	if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return cerr
}

func lockHolder(dbPath string) (*BoltWriter, error) {
	f, err := os.Open(lockPath(dbPath))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readHolder(f), nil
}

// unlockFile does nothing here: closing the database file lets go of its lock.
func unlockFile(*os.File) {}
