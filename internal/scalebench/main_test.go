package scalebench

import (
	"os"
	"testing"

	"github.com/knue/syncjob/internal/testmain"
)

// init keeps the collector at Go's default here (GOGC 100): testmain.Run
// would run it at 400 for the tests' sake, and the minimal client and the
// in-process profiles must run as a program does.
func init() {
	if _, set := os.LookupEnv("GOGC"); !set {
		_ = os.Setenv("GOGC", "100")
	}
}

func TestMain(m *testing.M) { testmain.Run(m) }
