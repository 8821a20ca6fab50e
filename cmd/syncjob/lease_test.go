package main

import (
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/registry"
)

func TestLease_ShowAndRelease_AsksFirst(t *testing.T) {
	t.Parallel()
	w := newCloudflareWorld(t)
	seed(w)
	w.sync(0)
	if r := w.run("lease", "show"); r.code != exitOK || r.stdout != "lease   none\n" {
		t.Errorf("lease show without a lease: exit %d %q", r.code, r.stdout)
	}
	if r := w.run("lease", "release", "--yes"); r.code != exitOK || r.stdout != "no lease to release\n" {
		t.Errorf("lease release without a lease: exit %d %q", r.code, r.stdout)
	}
	// A lease a crashed run left: its time is up, and Workers KV keeps the
	// key until its TTL (written here long, as the runs go by an hour each).
	s := w.store()
	t.Cleanup(func() { _ = s.Close() })
	reg := registry.New(s)
	left := `{"owner":"lambda req-crashed","acquiredAt":"2026-11-25T16:00:00Z","expiresAt":"2026-11-25T16:06:00Z"}`
	if errs := s.Put(t.Context(), []registry.Pair{{Key: registry.LeaseKey, Value: []byte(left), TTL: 48 * time.Hour}}); len(errs) > 0 {
		t.Fatal(errs)
	}
	if r := w.run("lease", "show"); !strings.HasPrefix(r.stdout, "lease   expired, left by lambda req-crashed") {
		t.Errorf("lease show: %q", r.stdout)
	}
	if r := w.run("lease", "show", "--json"); !strings.Contains(r.stdout, `"owner": "lambda req-crashed"`) || !strings.Contains(r.stdout, `"expired": true`) {
		t.Errorf("lease show --json:\n%s", r.stdout)
	}
	if r := w.run("lease", "release", "--id", "lambda req-crashed"); r.code != exitUsage || !strings.Contains(r.stderr, "add --yes") {
		t.Errorf("release without a terminal or --yes: exit %d %q", r.code, r.stderr)
	}
	w.stdin, w.stdinTerminal = strings.NewReader("n\n"), true
	if r := w.run("lease", "release", "--id", "lambda req-crashed"); r.code != exitFailed || !strings.Contains(r.stderr, "release the lease of lambda req-crashed") || !strings.Contains(r.stderr, "expired)? [y/N]") {
		t.Errorf("release answered no: exit %d %q", r.code, r.stderr)
	}
	if l, err := reg.Lease(t.Context()); err != nil || l == nil {
		t.Fatalf("the lease is gone after a no: %v %v", l, err)
	}
	w.stdin = strings.NewReader("y\n")
	if r := w.run("lease", "release", "--id", "lambda req-crashed"); r.code != exitOK || r.stdout != "released the lease of lambda req-crashed; the next run plans from the head tree, since that run did not finish\n" {
		t.Errorf("release answered yes: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	// ended now, but not marked released: the evidence that its run did not
	// finish stays for the next run
	if l, err := reg.Lease(t.Context()); err != nil || l == nil || l.Holds(w.clock()) || l.Released() {
		t.Errorf("lease after release: %+v %v", l, err)
	}
}

func TestLease_Release_RequiresTheLeaseID(t *testing.T) {
	t.Parallel()
	w := newCloudflareWorld(t)
	seed(w)
	w.sync(0)
	reg := w.open()
	left := `{"owner":"lambda req-crashed","acquiredAt":"2026-11-25T16:00:00Z","expiresAt":"2026-11-25T16:06:00Z"}`
	if errs := w.store().Put(t.Context(), []registry.Pair{{Key: registry.LeaseKey, Value: []byte(left), TTL: 48 * time.Hour}}); len(errs) > 0 {
		t.Fatal(errs)
	}
	r := w.run("lease", "release", "--yes")
	if want := "syncjob: lease release: give the id of the lease to release: syncjob lease release --id 'lambda req-crashed'; see syncjob lease release --help\n"; r.code != exitUsage || r.stderr != want || !strings.HasPrefix(r.stdout, "lease   expired, left by lambda req-crashed") {
		t.Errorf("release without --id: exit %d\nstdout %q\nstderr %q\nwant 2, the lease shown and %q", r.code, r.stdout, r.stderr, want)
	}
	r = w.run("lease", "release", "--id", "lambda req-other", "--yes")
	if want := "syncjob: lease release: the lease is held by lambda req-crashed, not lambda req-other: nothing released (syncjob lease show)\n"; r.code != exitRefused || r.stderr != want {
		t.Errorf("release of another id: exit %d, stderr %q; want 4 and %q", r.code, r.stderr, want)
	}
	if l, err := reg.Lease(t.Context()); err != nil || l == nil || l.Owner != "lambda req-crashed" {
		t.Fatalf("a refused release changed the lease: %+v %v", l, err)
	}
	if r := w.run("lease", "release", "--id", "lambda req-crashed", "--yes"); r.code != exitOK || !strings.HasPrefix(r.stdout, "released the lease of lambda req-crashed") {
		t.Errorf("release with its id: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
}

func TestSync_LeaseHeld_NamesHolderAndTheCommandThatClearsIt(t *testing.T) {
	t.Parallel()
	w := newCloudflareWorld(t)
	seed(w)
	w.sync(0)
	held := `{"owner":"lambda req-running","acquiredAt":"2026-11-25T18:00:00Z","expiresAt":"2026-11-25T23:00:00Z"}`
	if errs := w.store().Put(t.Context(), []registry.Pair{{Key: registry.LeaseKey, Value: []byte(held), TTL: 48 * time.Hour}}); len(errs) > 0 {
		t.Fatal(errs)
	}
	w.repo.Write("규정/신규.md", "# 신규\n")
	w.repo.Commit("one more")
	r := w.run("sync")
	if got := firstLine(r.stdout); !strings.Contains(got, "lambda req-running") || !strings.Contains(got, "syncjob lease release --id 'lambda req-running'") {
		t.Errorf("exit %d, first line %q: want the holder and the command that clears the lease", r.code, got)
	}
	// recorded refused, so printed refused (review); exit 1, so that Lambda
	// retries a run another one kept out (docs/design.md, the run-error table)
	if got := firstLine(r.stdout); r.code != exitFailed || !strings.HasPrefix(got, "refused:") {
		t.Errorf("exit %d, first line %q: want exit 1 and the first word refused:, as the run is recorded", r.code, got)
	}
}

func TestLease_Show_NamesTheWriterOfTheFile(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.sync(0)
	if r := w.run("lease", "show"); r.code != exitOK || r.stdout != "lease   none\nwriter  none\n" {
		t.Errorf("lease show on the file: exit %d %q", r.code, r.stdout)
	}
}
