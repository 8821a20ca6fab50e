package main

import (
	"strings"
	"testing"
	"time"
)

// TestSync_Bolt_LeaseOfAKilledRun_NextRunAtOnceAndFull: on the registry file
// a lease left by a SIGKILLed run does not keep the next run out for its
// TTL (the file's lock proves no writer lives), and the next run is full.
func TestSync_Bolt_LeaseOfAKilledRun_NextRunAtOnceAndFull(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.sync(0)
	reg := w.open()
	if _, err := reg.TakeLease(t.Context(), nil, "killed run", w.clock(), 10*time.Hour); err != nil {
		t.Fatal(err)
	}
	_ = reg.Close()
	w.repo.Write("규정/새 규정.md", "# 새 규정\n")
	w.repo.Commit("add")

	w.sync(0)
	s := w.state()
	if s.lastRun.Mode != "full" || s.lastRun.Added != 1 {
		t.Errorf("lastRun = %+v, want a full run adding 1", s.lastRun)
	}
}

// TestStatus_Bolt_LeaseOfAKilledRun_UnhealthyAtOnce: status --check said
// healthy for the 6 minutes after a SIGKILL while the lease was unexpired,
// though no process held the file: a sync takes such a lease at once, and
// the registry may differ from lastRun's commit (an adversarial helper saw
// 9 to 29 entries differ).
func TestStatus_Bolt_LeaseOfAKilledRun_UnhealthyAtOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.sync(0)
	reg := w.open()
	if _, err := reg.TakeLease(t.Context(), nil, "killed run", w.clock(), 6*time.Minute); err != nil {
		t.Fatal(err)
	}
	_ = reg.Close()
	r := w.run("status", "--check")
	if r.code != exitFailed || !strings.Contains(r.stdout, "killed run") {
		t.Errorf("status --check: exit %d, want 1 naming the killed run's lease: %s", r.code, r.stdout)
	}
	if r := w.run("status"); !strings.Contains(r.stdout, "did not finish") {
		t.Errorf("status does not say the lease's run did not finish:\n%s", r.stdout)
	}
}
