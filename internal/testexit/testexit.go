// Package testexit ends a test binary without the race detector's pause
// at exit.
//
// A binary built with -race sleeps for GORACE's atexit_sleep_ms (1000 ms
// by default) before it exits whenever goroutines besides main remain,
// and the runtime's own always do. Each of this module's twenty test
// packages paid it once: ten seconds of `go test -race ./...` on two
// cores, with nothing running. The testing package already fails a run
// in which the detector reported a race, during a test or outside one
// ("race detected during execution of test", "race detected outside of
// test execution"), and writes its profiles and coverage before Run
// returns; a passing run has nothing left for the detector to say, and
// ends at once. A failing one exits as it always did.
//
// Every test package's TestMain is
//
//	func TestMain(m *testing.M) { testexit.Main(m) }
package testexit

import (
	"os"
	"syscall"
	"testing"
)

// Main runs the tests and exits with their code; a passing run under
// the race detector skips the detector's finalizer and its pause.
func Main(m *testing.M) {
	code := m.Run()
	if code == 0 && raceEnabled {
		syscall.Exit(0)
	}
	os.Exit(code)
}
