package report

import (
	"testing"

	"github.com/knue/syncjob/internal/policy"
)

// A partial run's failures are told by what becomes of them: a content
// mirror repair of a policy the plan did not touch, or a foreign object, is
// no queue entry's, and was called "queued for retry" (an adversarial
// helper: five runs said so, and nothing was queued).
func TestRunLine_MirrorRepairFailure_NotCalledQueued(t *testing.T) {
	t.Parallel()
	plan := policy.Plan{Items: []policy.Item{{PolicyName: "planned"}}}
	for _, tc := range []struct {
		failures []policy.Failure
		want     string
	}{
		{[]policy.Failure{{PolicyName: "planned", Error: "content mirror: s3: put: unavailable"}}, " (queued for retry)"},
		{[]policy.Failure{{PolicyName: "학칙", Error: "content mirror: render: too large"}}, " (left for the next full run)"},
		{[]policy.Failure{{PolicyName: "planned", Error: "kv"}, {PolicyName: "학칙", Error: "content mirror: x"}}, " (1 queued for retry, 1 left for the next full run)"},
		{[]policy.Failure{{PolicyName: "dead-letter:planned", Error: "delete refused"}}, " (left for the next full run)"},
		{[]policy.Failure{{PolicyName: "policies/../x", Error: "content mirror: foreign object not deleted: ...; an operator must remove it"}}, " (for an operator)"},
	} {
		r := Run{plan: plan, sum: policy.RunSummary{ErrorCount: len(tc.failures), Failures: tc.failures}}
		if got := failedFate(len(tc.failures), 0, r.unplanned()); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.failures, got, tc.want)
		}
	}
	if got := failedFate(3, 3, unplannedFailures{}); got != " (given up: now dead letters)" {
		t.Errorf("all given up: %q", got)
	}
	if got := failedFate(3, 1, unplannedFailures{}); got != " (2 queued for retry, 1 given up: now a dead letter)" {
		t.Errorf("some given up: %q", got)
	}
}
