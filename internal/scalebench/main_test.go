package scalebench

import (
	"testing"

	"github.com/knue/syncjob/internal/testexit"
)

func TestMain(m *testing.M) { testexit.Main(m) }
