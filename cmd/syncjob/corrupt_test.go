package main

import (
	"bytes"
	"fmt"
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

// TestStatusCheck_DamagedPoliciesInTheFile_NotHealthy: with bytes flipped
// in the file where a policy is stored, list, status and a full sync
// failed, yet status --check (which read only the state and the dead
// letters) said healthy until STATUS_MAX_AGE ran out (an adversarial
// helper). The check reads the file whole.
func TestStatusCheck_DamagedPoliciesInTheFile_NotHealthy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for i := range 30 {
		w.repo.Write(fmt.Sprintf("규정/규정 %02d.md", i), fmt.Sprintf("# 규정 %02d\n\n%s\n", i, strings.Repeat("본문 ", 200)))
	}
	w.repo.Commit("thirty")
	w.sync(0)
	b, err := os.ReadFile(w.db)
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("policy:규정 15")
	for at := 0; ; { // its value follows it, in every page that holds it
		i := bytes.Index(b[at:], key)
		if i < 0 {
			break
		}
		at += i + len(key)
		for j := range 16 {
			b[at+j] ^= 0xA5
		}
	}
	if err := os.WriteFile(w.db, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := w.run("list"); r.code == exitOK {
		t.Fatalf("setup: list reads the damaged file (exit 0): the damage missed the policies")
	}
	if r := w.run("status", "--check"); r.code == exitOK {
		t.Errorf("status --check: exit 0 (%s) on a file whose policies no command can read", strings.TrimSpace(r.stdout))
	}
}
