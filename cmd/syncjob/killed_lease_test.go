package main

import (
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
