package registry

import (
	"errors"
	"strings"
	"testing"

	berrors "go.etcd.io/bbolt/errors"
)

// TestBolt_OpenError_BusyInAnotherProcess_InUse: a registry file another
// process kept busy past the wait (bbolt's flock timeout) is in use, as a
// file another syncjob writer holds (ErrInUse: the command exits 1), not a
// setting's fault (exit 2, as an adversarial helper found it), and says so.
func TestBolt_OpenError_BusyInAnotherProcess_InUse(t *testing.T) {
	t.Parallel()
	err := (&Bolt{path: "/data/registry.db"}).openError(berrors.ErrTimeout)
	if !errors.Is(err, ErrInUse) || !errors.Is(err, berrors.ErrTimeout) {
		t.Errorf("openError(timeout) = %v: want it to match ErrInUse and keep the timeout", err)
	}
	if !strings.Contains(err.Error(), "another process kept it busy") || !strings.Contains(err.Error(), "/data/registry.db") {
		t.Errorf("openError(timeout) = %q: want the file and the cause named", err)
	}
}
