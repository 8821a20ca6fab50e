package deadletter_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/deadletter"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/registrytest"
)

// An operator's retry or drop whose write fails says so once: the
// registry's error names the operation and the policy ("registry: retry
// dead letter a: …"); the command wrapped it in its own ("deadletter
// retry a: registry: retry dead letter a: …", review of #16).
func TestRetryAndDrop_WriteFails_ErrorSaysEachLayerOnce(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	now := func() time.Time { return time.Date(2026, 11, 25, 16, 0, 0, 0, time.UTC) }
	for what, tc := range map[string]struct {
		key string
		do  func(reg *registry.Registry, l *deadletter.Lease) error
	}{
		"retry": {"queue:a", func(reg *registry.Registry, l *deadletter.Lease) error {
			return deadletter.Retry(t.Context(), reg, l, "a")
		}},
		"drop": {"dead-letter:a", func(reg *registry.Registry, l *deadletter.Lease) error {
			return deadletter.Drop(t.Context(), reg, l, "a")
		}},
	} {
		f := registrytest.NewFaulty(registry.NewMemory(now))
		registrytest.MustPut(t, f, registry.DeadLetterPair(policy.DeadLetter{
			QueueEntry: policy.QueueEntry{PolicyName: "a", SHA: "s", Operation: "add", CreatedAt: "2026-11-25T15:00:00Z", RetryCount: 3},
			DeadAt:     "2026-11-25T15:30:00Z",
		}))
		reg := registry.New(f)
		l, err := deadletter.Hold(t.Context(), reg, "deadletter "+what, now, func(error) {})
		if err != nil {
			t.Fatal(err)
		}
		f.FailKeys(map[string]error{tc.key: boom})
		err = tc.do(reg, l)
		if !errors.Is(err, boom) {
			t.Fatalf("%s: %v; want boom", what, err)
		}
		if n := strings.Count(err.Error(), " a:"); n != 1 {
			t.Errorf("%s: %q names the policy %d times; want once", what, err, n)
		}
		if n := strings.Count(err.Error(), "dead letter"); n != 1 {
			t.Errorf("%s: %q says what it did %d times; want once", what, err, n)
		}
	}
}
