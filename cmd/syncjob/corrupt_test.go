package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/knue/syncjob/internal/registry"
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
// in the file where a policy is stored, status --check (which read only
// the state and the dead letters) said healthy until STATUS_MAX_AGE ran
// out (an adversarial helper). The check reads the file whole, and names
// the policy and the way out.
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
		t.Fatalf("setup: list reads every policy (exit 0): the damage missed them")
	}
	if r := w.run("status", "--check"); r.code == exitOK || !strings.Contains(r.stdout, "규정 15") || !strings.Contains(r.stdout, "sync --full") {
		t.Errorf("status --check: exit %d (%s), want 1 naming 규정 15 and sync --full", r.code, strings.TrimSpace(r.stdout))
	}
	if r := w.run("sync", "--full"); r.code != exitOK {
		t.Errorf("sync --full: exit %d: %s", r.code, firstLine(r.stdout))
	}
	if r := w.run("status", "--check"); r.code != exitOK {
		t.Errorf("status --check after sync --full: exit %d (%s)", r.code, strings.TrimSpace(r.stdout))
	}
}

// putRawRecord stores raw as key's record in the registry file, as damage
// would leave it.
func putRawRecord(t *testing.T, w *world, key string, raw []byte) {
	t.Helper()
	db, err := bbolt.Open(w.db, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bbolt.Tx) error { return tx.Bucket([]byte("registry")).Put([]byte(key), raw) }); err != nil {
		t.Fatal(err)
	}
}

// TestRegistryFile_OneDamagedRecord_FullSyncRewritesIt: one damaged record
// failed every full sync and every listing ("unreadable stored value"), and
// on a state key every run, naming neither the key nor the way out (an
// adversarial helper). The key is what is unreadable now: a full sync
// writes it again from the head, and then all reads work.
func TestRegistryFile_OneDamagedRecord_FullSyncRewritesIt(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"policy:학칙", "queue:학칙", registry.LastCommitKey, registry.LastRunKey, registry.LeaseKey} {
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			seed(w)
			w.sync(0)
			putRawRecord(t, w, key, []byte{0xff, 1, 2})
			if r := w.run("sync", "--full"); r.code != exitOK {
				t.Fatalf("sync --full over the damaged %s: exit %d: %s%s", key, r.code, r.stdout, r.stderr)
			}
			for _, args := range append(reads, []string{"status", "--check"}) {
				if r := w.run(args...); r.code != exitOK {
					t.Errorf("%v after the full sync: exit %d: %s%s", args, r.code, r.stdout, r.stderr)
				}
			}
			if s := w.state(); len(s.policies) != 3 {
				t.Errorf("%d policies after the full sync, want 3", len(s.policies))
			}
		})
	}
}

// TestRegistryFile_DamagedRecordOfAPolicyTheHeadDropped_KeptAndNamed: an
// unreadable policy key whose name the head no longer has is not deleted
// (its content cannot be checked: a legacy entry is not ours to lose, and
// a stand-in sha let the mass-delete guard through: a reviewer), and status
// does not advise the sync --full that cannot help: it names the key and
// says to remove it by hand.
func TestRegistryFile_DamagedRecordOfAPolicyTheHeadDropped_KeptAndNamed(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.sync(0)
	w.repo.Remove("규정/제1편/학칙.md")
	w.repo.Commit("drop 학칙")
	putRawRecord(t, w, "policy:학칙", []byte{0xff, 1, 2})
	if r := w.run("sync", "--full"); r.code != exitOK {
		t.Fatalf("sync --full: exit %d: %s", r.code, firstLine(r.stdout))
	}
	c := w.run("status", "--check")
	if c.code != exitFailed || !strings.Contains(c.stdout, "학칙") || !strings.Contains(c.stdout, "remove them by hand") {
		t.Errorf("status --check: exit %d: %s; want 1 naming 학칙 and what to do", c.code, strings.TrimSpace(c.stdout))
	}
}
