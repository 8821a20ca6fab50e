package main

import (
	"strings"
	"testing"
)

func TestOps_StatusAfterDeadLetter(t *testing.T) {
	forEachBackend(t, func(t *testing.T, w *world) {
		deadLetterWorld(t, w)
		r := w.run("status")
		if r.code != 0 {
			t.Fatalf("status: exit %d\n%s", r.code, r.stderr)
		}
		t.Logf("$ syncjob status\n%s", r.stdout)
		for _, want := range []string{"PARTIAL", "dead letters   2", "학칙", "502", "queue          ", "last success", "recent runs"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("status lacks %q:\n%s", want, r.stdout)
			}
		}
		r = w.run("status", "--json")
		if !strings.Contains(r.stdout, `"deadLetters": [`) || !strings.Contains(r.stdout, `"retryCount": 3`) {
			t.Errorf("status --json:\n%s", r.stdout)
		}
		// Later runs leave the dead letters alone: nothing to do.
		if s := w.sync(0); !strings.Contains(s.stdout, "unchanged mode") {
			t.Errorf("run after dead letters:\n%s", s.stdout)
		}
	})
}
