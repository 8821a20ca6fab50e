package main

import (
	"testing"
	"time"
)

func TestMetrics_HeldBackCountsDeadLettersHoldingVersions(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	deadLetterWorld(t, w)
	// A full run sees the head's versions again; the dead letters hold them back.
	inv := w.invoke(`{"mode":"full"}`, time.Minute)
	if inv.err != nil {
		t.Fatalf("handler: %v", inv.err)
	}
	m := inv.metrics(t)
	if len(m) != 1 || m[0]["HeldBack"] != 2.0 {
		t.Fatalf("EMF HeldBack = %v, want 2 (학칙 and 대학원 학칙)", m)
	}
	// Released, nothing is held back.
	w.run("deadletter", "retry", "--all")
	inv = w.invoke(`{"mode":"full"}`, time.Minute)
	if m := inv.metrics(t); len(m) != 1 || m[0]["HeldBack"] != 0.0 {
		t.Errorf("EMF HeldBack after retry --all = %v, want 0", m)
	}
}
