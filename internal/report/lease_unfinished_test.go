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
	owned := *last
	owned.LeaseOwner = "lambda-req-1" // a record that names the owner it took the lease as
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
		{"the last run's, by its recorded owner", lease("lambda-req-1", "2026-11-25T15:00:10Z"), true, &owned, false},
		{"another owner's, within the last run's second", lease("lambda-req-2", "2026-11-25T15:00:11Z"), true, &owned, true},
		{"still held", lease("lambda-req-2", "2026-11-25T15:02:00Z"), false, last, false},
		{"released", released, true, last, false},
		{"none", nil, true, last, false},
	} {
		if got := Unfinished(c.l, c.expired, c.lr); got != c.want {
			t.Errorf("%s: Unfinished = %v, want %v", c.name, got, c.want)
		}
	}
}

// Back-to-back Lambda runs (a webhook burst: reserved concurrency 1 runs
// the queued push the moment the last run returns). Run A started at
// 15:00:10.9 and measured 1.5 s (durationMs is taken before its record);
// its record took 0.4 s, and the next invocation read its state and took
// the lease at 15:00:12.95, recorded "15:00:12", then was killed. Nothing
// recorded its end: its lease is unfinished, though by time (A's
// whole-second start, its duration and the second of slack: 15:00:12.5)
// it would pass for A's. A records the owner it took the lease as, so the
// owners tell.
func TestUnfinished_NextRunOfABurstKilled(t *testing.T) {
	t.Parallel()
	a := &policy.RunSummary{RunID: "0f3a9c1d2e4b5a6c", LeaseOwner: "lambda 7d1e-req-a", Timestamp: "2026-11-25T15:00:10Z", DurationMs: 1500, Status: policy.RunSuccess}
	killed := &registry.Lease{Owner: "lambda 7d1e-req-b", AcquiredAt: "2026-11-25T15:00:12Z", ExpiresAt: "2026-11-25T15:15:12Z"}
	if !Unfinished(killed, true, a) {
		t.Errorf("the lease of the next run, taken after A returned and never released: Unfinished = false; status says %q", leaseText(killed, true, a))
	}
	own := &registry.Lease{Owner: "lambda 7d1e-req-a", AcquiredAt: "2026-11-25T15:00:10Z", ExpiresAt: "2026-11-25T15:15:10Z"}
	if Unfinished(own, true, a) {
		t.Errorf("A's own lease, its release lost: Unfinished = true; status says %q", leaseText(own, true, a))
	}
}

// Lambda's retries of one invocation share its request id, so the lease
// owner: attempt 1 took the lease and was killed, attempt 2 failed before
// its lease step and recorded lastRun under the same owner. The lease,
// taken before attempt 2 started, is attempt 1's, whose end nothing
// recorded (review: status called it the recorded run's lost release).
func TestUnfinished_LambdaRetrySameOwner_FailedBeforeItsLease_EarlierAttemptsLease(t *testing.T) {
	t.Parallel()
	attempt2 := &policy.RunSummary{RunID: "run-2", LeaseOwner: "lambda req-1", Timestamp: "2026-11-25T16:16:10Z", DurationMs: 900, Status: policy.RunFailed}
	left := &registry.Lease{Owner: "lambda req-1", AcquiredAt: "2026-11-25T16:00:05Z", ExpiresAt: "2026-11-25T16:03:05Z"}
	if !Unfinished(left, true, attempt2) {
		t.Errorf("attempt 1's lease, taken before attempt 2 started: Unfinished = false; status says %q", leaseText(left, true, attempt2))
	}
}

// Lambda's retry of a failed invocation shares its request id, so its
// lease owner. Attempt 1 failed at once (GitHub 5xx), recorded lastRun
// and released its lease; Lambda retried a minute later, attempt 2 took
// the lease and was killed (the Lambda timeout) before it recorded. The
// expired lease, taken long after the recorded run ended, is attempt 2's,
// whose end nothing recorded. Review: status called it the recorded run's
// lost release, and status --check did not say a run did not finish.
func TestUnfinished_SameOwnerLeaseTakenAfterTheRecordedRunEnded(t *testing.T) {
	t.Parallel()
	attempt1 := &policy.RunSummary{RunID: "run-1", LeaseOwner: "lambda req-1", Timestamp: "2026-11-25T16:00:05Z", DurationMs: 900, Status: policy.RunFailed}
	left := &registry.Lease{Owner: "lambda req-1", AcquiredAt: "2026-11-25T16:01:10Z", ExpiresAt: "2026-11-25T16:07:10Z"}
	if !Unfinished(left, true, attempt1) {
		t.Errorf("attempt 2's lease, taken after attempt 1's record: Unfinished = false; status says %q", leaseText(left, true, attempt1))
	}
}
