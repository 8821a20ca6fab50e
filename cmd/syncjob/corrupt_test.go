package main

import (
	"os"
	"strings"
	"testing"
)

// TestRegistryFile_TruncatedOrEmpty_ClearErrorNamingTheWayOut: every
// command on a damaged registry file ends in an error naming the file and
// what to do, never a crash; an empty file does not become a new registry.
func TestRegistryFile_TruncatedOrEmpty_ClearErrorNamingTheWayOut(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.sync(0)
	raw, err := os.ReadFile(w.db)
	if err != nil {
		t.Fatal(err)
	}
	for name, damaged := range map[string][]byte{"truncated": raw[:3*4096], "empty": nil} {
		if err := os.WriteFile(w.db, damaged, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range append(reads, []string{"sync"}, []string{"sync", "--dry-run"}) {
			r := w.run(args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, "registry file "+w.db+" is corrupt") || !strings.Contains(r.stderr, "run `syncjob sync --full` to rebuild") {
				t.Errorf("%s file, %v: exit %d, stderr %q; want 2 naming the file and the way out", name, args, r.code, r.stderr)
			}
		}
		if got, _ := os.ReadFile(w.db); len(got) != len(damaged) {
			t.Errorf("%s file: changed to %d bytes", name, len(got))
		}
	}
}
