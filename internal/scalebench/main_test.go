package scalebench

import (
	"os"
	"testing"

	"github.com/knue/syncjob/internal/testmain"
)

// TestMain keeps the collector at Go's default here: testmain.Run would
// run it at GOGC 400 for the tests' sake, and the minimal client and the
// in-process profiles must run as a program does.
func TestMain(m *testing.M) {
	if _, set := os.LookupEnv("GOGC"); !set {
		os.Setenv("GOGC", "100")
	}
	testmain.Run(m)
}
