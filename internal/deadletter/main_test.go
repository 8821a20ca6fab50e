package deadletter_test

import (
	"testing"

	"github.com/knue/syncjob/internal/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }
