package report

import (
	"testing"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// A lease is left by a run that did not finish only when no recorded run
// accounts for it: the last run's own lease (its release lost), within a
// second of its whole-second timestamps, is not.
func TestUnfinished_OnlyALeaseNoRecordedRunTook(t *testing.T) {
	t.Parallel()
	last := &policy.RunSummary{RunID: "run-a", Timestamp: "2026-11-25T15:00:10Z", DurationMs: 200}
	lease := func(owner, at string) *registry.Lease {
		return &registry.Lease{Owner: owner, AcquiredAt: at, ExpiresAt: "2026-11-25T15:03:00Z"}
	}
	released := lease("run-b", "2026-11-25T15:02:00Z")
	released.ReleasedAt = "2026-11-25T15:02:30Z"
	for _, c := range []struct {
		name    string
		l       *registry.Lease
		expired bool
		lr      *policy.RunSummary
		want    bool
	}{
		{"a later run's, expired", lease("lambda-req-2", "2026-11-25T15:02:00Z"), true, last, true},
		{"no run recorded", lease("run-a", "2026-11-25T15:00:10Z"), true, nil, true},
		{"the last run's, by owner", lease("run-a", "2026-11-25T15:00:11Z"), true, last, false},
		{"the last run's, by time (a Lambda attempt owns it)", lease("lambda-req-1", "2026-11-25T15:00:11Z"), true, last, false},
		{"still held", lease("lambda-req-2", "2026-11-25T15:02:00Z"), false, last, false},
		{"released", released, true, last, false},
		{"none", nil, true, last, false},
	} {
		if got := Unfinished(c.l, c.expired, c.lr); got != c.want {
			t.Errorf("%s: Unfinished = %v, want %v", c.name, got, c.want)
		}
	}
}
