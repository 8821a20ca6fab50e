package testmain_test

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// helper is which helper test the child runs: the tests below run this
// binary again with it set, so each child is a whole test run.
const helper = "TESTMAIN_HELPER"

func TestHelper_Passes(t *testing.T) {
	if os.Getenv(helper) == "" {
		t.Skip("runs as a child of the tests below")
	}
}

func TestHelper_Fails(t *testing.T) {
	if os.Getenv(helper) == "" {
		t.Skip("runs as a child of the tests below")
	}
	t.Error("this run must fail")
}

// child runs the test binary again with only the helper test named.
func child(t *testing.T, test string, env ...string) (out string, code int, took time.Duration) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Env = environ(append([]string{helper + "=1"}, env...))
	start := time.Now()
	b, err := cmd.CombinedOutput()
	took = time.Since(start)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run %s: %v", test, err)
	}
	return string(b), code, took
}

// environ is this process's environment with env's settings in place of
// its own; "KEY=" unsets KEY.
func environ(env []string) []string {
	set := map[string]bool{}
	var out []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		set[k] = true
		if v != "" {
			out = append(out, kv)
		}
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !set[k] {
			out = append(out, kv)
		}
	}
	return out
}

func TestHelper_SaysTempDir(t *testing.T) {
	if os.Getenv(helper) == "" {
		t.Skip("runs as a child of the tests below")
	}
	fmt.Printf("tmp=%s\n", os.TempDir())
	if base := cmp.Or(os.Getenv("GOTMPDIR"), os.TempDir()); !strings.HasPrefix(t.TempDir(), base) {
		t.Errorf("t.TempDir() is not under %s", base)
	}
}

// tempDirOf is the temporary folder a child run said it had.
func tempDirOf(t *testing.T, out string) string {
	t.Helper()
	return said(t, out, "tmp")
}

// said is what a child run printed as key=value.
func said(t *testing.T, out, key string) string {
	t.Helper()
	_, rest, ok := strings.Cut(out, key+"=")
	v, _, _ := strings.Cut(rest, "\n")
	if !ok || v == "" {
		t.Fatalf("the child said no %s:\n%s", key, out)
	}
	return v
}

func TestRun_TempFoldersInMemory_RemovedAtTheEnd(t *testing.T) {
	t.Parallel()
	if fi, err := os.Stat("/dev/shm"); err != nil || !fi.IsDir() || runtime.GOOS != "linux" {
		t.Skip("no /dev/shm here")
	}
	out, code, _ := child(t, "TestHelper_SaysTempDir", "TMPDIR=", "GOTMPDIR=")
	dir := tempDirOf(t, out)
	if code != 0 || !strings.HasPrefix(dir, "/dev/shm/syncjob-test-") {
		t.Fatalf("exit %d, temporary folder %q, want one of /dev/shm\n%s", code, dir, out)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s is left after the run (%v)", dir, err)
	}
}

func TestRun_TMPDIRSet_Kept(t *testing.T) {
	t.Parallel()
	want := t.TempDir()
	out, code, _ := child(t, "TestHelper_SaysTempDir", "TMPDIR="+want)
	if got := tempDirOf(t, out); code != 0 || got != want {
		t.Errorf("exit %d, temporary folder %q, want TMPDIR's %q\n%s", code, got, want, out)
	}
}

func TestRun_PassingRunExitsZero_WithoutThePause(t *testing.T) {
	t.Parallel()
	// A race binary would sleep 5 s before exiting; this one must not.
	out, code, took := child(t, "TestHelper_Passes", "GORACE=atexit_sleep_ms=5000")
	if code != 0 || !strings.Contains(out, "PASS") {
		t.Fatalf("exit %d, want 0\n%s", code, out)
	}
	if raceEnabled && took >= 4*time.Second {
		t.Errorf("a passing run under -race took %v to exit: the detector's 5 s pause at exit ran", took)
	}
}

func TestRun_FailingRunExitsNonZero(t *testing.T) {
	t.Parallel()
	out, code, _ := child(t, "TestHelper_Fails")
	if code == 0 || !strings.Contains(out, "this run must fail") {
		t.Fatalf("exit %d, want non-zero\n%s", code, out)
	}
}

func TestHelper_SaysGCPercent(t *testing.T) {
	if os.Getenv(helper) == "" {
		t.Skip("runs as a child of the tests below")
	}
	fmt.Printf("gc=%d\n", debug.SetGCPercent(-1))
}

// TestRun_CollectorRunsLessOften_UnlessGOGCSet: GOGC 400 when GOGC is not
// set, and GOGC's own value when it is.
func TestRun_CollectorRunsLessOften_UnlessGOGCSet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ env, want string }{{"GOGC=", "gc=400\n"}, {"GOGC=150", "gc=150\n"}} {
		out, code, _ := child(t, "TestHelper_SaysGCPercent", tc.env)
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit %d, want it to say %q\n%s", tc.env, code, tc.want, out)
		}
	}
}

// TestEveryTestPackage_UsesMain keeps the pause out of every package:
// a package that forgets TestMain costs the suite a second.
func TestEveryTestPackage_UsesMain(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	tests := map[string]bool{} // directory -> has a TestMain calling testmain.Main
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir := filepath.Dir(path)
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		tests[dir] = tests[dir] || strings.Contains(string(src), "func TestMain(m *testing.M) { testmain.Run(m) }")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) < 19 {
		t.Fatalf("found %d test packages under %s, want the module's 19 or more", len(tests), root)
	}
	for dir, ok := range tests {
		if !ok {
			rel, _ := filepath.Rel(root, dir)
			t.Errorf("%s: no `func TestMain(m *testing.M) { testmain.Run(m) }`", rel)
		}
	}
}

func TestHelper_SaysParallel(t *testing.T) {
	if os.Getenv(helper) == "" {
		t.Skip("runs as a child of the tests below")
	}
	fmt.Printf("parallel=%s\n", flag.Lookup("test.parallel").Value)
}

// Parallel tests run twice as many at once as there are processors, unless
// -parallel says otherwise.
func TestRun_ParallelTwicePerProcessor_UnlessGiven(t *testing.T) {
	t.Parallel()
	out, code, _ := child(t, "TestHelper_SaysParallel", "GOMAXPROCS=3")
	if got := said(t, out, "parallel"); code != 0 || got != "6" {
		t.Errorf("exit %d, parallel %s with 3 processors, want 6\n%s", code, got, out)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelper_SaysParallel$", "-test.count=1", "-test.parallel=1")
	cmd.Env = environ([]string{helper + "=1"})
	b, err := cmd.CombinedOutput()
	if got := said(t, string(b), "parallel"); err != nil || got != "1" {
		t.Errorf("%v, parallel %s with -parallel 1 given, want 1\n%s", err, got, b)
	}
}
