// Package testmain runs a test binary's tests the way this module's suite
// needs on a small machine. Every test package's TestMain is
//
//	func TestMain(m *testing.M) { testmain.Run(m) }
//
// Four things change, none of them what a test checks:
//
//   - Temporary folders (t.TempDir, os.TempDir) are made in memory, in a
//     folder of /dev/shm when it is a writable tmpfs and neither TMPDIR
//     nor GOTMPDIR is set, and removed when the tests end (a binary
//     killed before leaves its folder behind). The tests write git
//     repositories and bolt files, which sync to disk on every commit;
//     on disk, the suite spent a fifth of its time waiting for it.
//   - A passing binary built with -race exits at once. The race detector
//     sleeps for GORACE's atexit_sleep_ms (1000 ms by default) before it
//     exits whenever goroutines besides main remain, and the runtime's
//     own always do: each of twenty test packages paid a second. The
//     testing package already fails a run in which the detector reported
//     a race, during a test or outside one ("race detected during
//     execution of test", "race detected outside of test execution"),
//     and writes its profiles and coverage before Run returns; a passing
//     run has nothing left for the detector to say. A failing one exits
//     as it always did.
//   - Tests marked parallel run twice as many at once as there are
//     processors (test.parallel), unless -parallel is given. Many of them
//     wait more than they compute — on a run's deadline, a lease's TTL, a
//     stalled fake — and at the default of one per processor, two of them
//     waiting held up the rest on a 2-core machine (go test -race ./...,
//     runs paired with the same tree at one per processor: 49.3 and 49.4 s
//     against 43.9 and 42.8 s).
//   - The collector runs a quarter as often (GOGC 400) unless GOGC is
//     set. The tests allocate much and keep little (the largest heap of
//     a package's run was 140 MB at GOGC 400), and under the race
//     detector every cycle costs more: at the default the suite spent
//     about 5 s of CPU collecting. A test that measures memory calls
//     runtime.GC itself, and what it measures does not move with GOGC.
package testmain

import (
	"flag"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
	"testing"
)

// memoryFS is where temporary folders go when it is a writable tmpfs.
const memoryFS = "/dev/shm"

// gcPercent is the collector's target when GOGC is not set.
const gcPercent = 400

// parallelPerCPU is how many parallel tests run at once per processor
// when -parallel is not given.
const parallelPerCPU = 2

// Run runs the tests and exits with their code.
func Run(m *testing.M) {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
	// m.Run parses the command line after this: a -parallel given there wins
	if f := flag.Lookup("test.parallel"); f != nil {
		_ = f.Value.Set(strconv.Itoa(parallelPerCPU * runtime.GOMAXPROCS(0)))
	}
	tmp := inMemoryTemp()
	code := m.Run()
	if tmp != "" {
		os.RemoveAll(tmp)
	}
	if code == 0 && raceEnabled {
		syscall.Exit(0) // no finalizer: no pause
	}
	os.Exit(code)
}

// inMemoryTemp points TMPDIR at a new folder of memoryFS and returns it;
// "" when TMPDIR or GOTMPDIR (t.TempDir's) is set already, or memoryFS is
// not a writable tmpfs.
func inMemoryTemp() string {
	_, tmp := os.LookupEnv("TMPDIR")
	_, gotmp := os.LookupEnv("GOTMPDIR")
	if tmp || gotmp || !isTmpfs(memoryFS) {
		return ""
	}
	dir, err := os.MkdirTemp(memoryFS, "syncjob-test-")
	if err != nil {
		return ""
	}
	if err := os.Setenv("TMPDIR", dir); err != nil {
		os.Remove(dir)
		return ""
	}
	return dir
}
