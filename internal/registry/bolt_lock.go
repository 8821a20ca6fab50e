package registry

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

// The single-writer lock of a registry file is a file beside it,
// <path>.lock, that holds its writer's BoltWriter as JSON. How it is locked
// depends on the system (bolt_lock_unix.go, bolt_lock_other.go).

// writerLock is a held lock file.
type writerLock struct {
	f    *os.File
	path string
}

func lockPath(dbPath string) string { return dbPath + ".lock" }

// lockWriter takes the lock of the registry file at dbPath for me, waiting
// up to timeout for the writer that holds it.
func lockWriter(dbPath string, me BoltWriter, timeout time.Duration) (*writerLock, error) {
	deadline := time.Now().Add(timeout)
	for {
		l, holder, err := tryLock(lockPath(dbPath), me)
		switch {
		case err != nil:
			return nil, fmt.Errorf("bolt: lock registry file %s: %w", dbPath, err)
		case l != nil:
			return l, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, &InUseError{Path: dbPath, Holder: holder, Waited: timeout}
		}
		time.Sleep(min(left, 50*time.Millisecond))
	}
}

// writeHolder records me in the held lock file f.
func writeHolder(f *os.File, me BoltWriter) error {
	b, err := json.Marshal(me)
	if err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt(append(b, '\n'), 0); err != nil {
		return err
	}
	return f.Sync()
}

// readHolder reads the writer a lock file names; nil when it names none
// (being written, or left empty).
func readHolder(f *os.File) *BoltWriter {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 4096))
	if err != nil {
		return nil
	}
	var w BoltWriter
	if json.Unmarshal(b, &w) != nil || w.PID == 0 {
		return nil
	}
	return &w
}
