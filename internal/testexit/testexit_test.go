package testexit_test

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/testexit"
)

func TestMain(m *testing.M) { testexit.Main(m) }

// helper is which helper test the child runs: the tests below run this
// binary again with it set, so each child is a whole test run.
const helper = "TESTEXIT_HELPER"

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
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), helper+"=1"), env...)
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

func TestMain_PassingRunExitsZero_WithoutThePause(t *testing.T) {
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

func TestMain_FailingRunExitsNonZero(t *testing.T) {
	t.Parallel()
	out, code, _ := child(t, "TestHelper_Fails")
	if code == 0 || !strings.Contains(out, "this run must fail") {
		t.Fatalf("exit %d, want non-zero\n%s", code, out)
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
	tests := map[string]bool{} // directory -> has a TestMain calling testexit.Main
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
		tests[dir] = tests[dir] || strings.Contains(string(src), "func TestMain(m *testing.M) { testexit.Main(m) }")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) < 20 {
		t.Fatalf("found %d test packages under %s, want the module's 20 or more", len(tests), root)
	}
	for dir, ok := range tests {
		if !ok {
			rel, _ := filepath.Rel(root, dir)
			t.Errorf("%s: no `func TestMain(m *testing.M) { testexit.Main(m) }`", rel)
		}
	}
}
