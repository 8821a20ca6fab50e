//go:build race

package testmain_test

import (
	"os"
	"strings"
	"testing"
)

const raceEnabled = true

func TestHelper_Races(t *testing.T) {
	if os.Getenv(helper) == "" {
		t.Skip("runs as a child of the tests below")
	}
	n, done := 0, make(chan bool)
	go func() { n++; done <- true }()
	n++
	<-done
	_ = n
}

// Skipping the detector's finalizer must not hide a race: the testing
// package fails the run itself.
func TestRun_RaceFailsTheRun(t *testing.T) {
	t.Parallel()
	out, code, _ := child(t, "TestHelper_Races")
	if code == 0 || !strings.Contains(out, "DATA RACE") {
		t.Fatalf("exit %d, want non-zero with the race reported\n%s", code, out)
	}
}
