package main

import (
	"strings"
	"testing"
)

// TestDeadLetterList_OneUnreadable_NotZeroNotOK: a dead letter whose value
// cannot be read still holds its version back (status --check says so):
// "deadletter list" fails (exit 1) naming it, and never says there are
// none. (An adversarial helper found it printing "0 dead letters", exit 0.)
func TestDeadLetterList_OneUnreadable_NotZeroNotOK(t *testing.T) {
	t.Parallel()
	w := unreadableDeadLetterWorld(t)
	chk := w.run("status", "--check")
	t.Logf("status --check: exit %d\n%s", chk.code, chk.stdout)
	for _, args := range [][]string{{"deadletter", "list"}, {"deadletter", "list", "--json"}} {
		r := w.run(args...)
		t.Logf("%v: exit %d\nstdout:\n%sstderr:\n%s", args, r.code, r.stdout, r.stderr)
		if r.code == exitOK {
			t.Errorf("%v: exit 0 while a dead letter could not be read (stdout %q)", args, r.stdout)
		}
		if strings.Contains(r.stdout, "0 dead letters") || strings.TrimSpace(r.stdout) == "[]" {
			t.Errorf("%v says there are no dead letters while status --check names 고장 as one", args)
		}
	}
}
