package lambda_test

import (
	"testing"
	"time"

	"github.com/knue/syncjob/internal/lambda"
	"github.com/knue/syncjob/internal/policy"
)

// TestRunMetrics_PartialSaysWhy: a partial run with nothing failed says
// why in its metrics, so that an alarm or a dashboard can tell a run that
// stopped before its deadline, or left items to the write budget, from one
// that trusted reads it could not verify (every run stays so while
// MAX_DURATION is under two consistency windows) and from one whose writes
// failed.
func TestRunMetrics_PartialSaysWhy(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		sum  policy.RunSummary
		want map[string]float64
	}{
		{"stopped before its deadline", policy.RunSummary{Status: policy.RunPartial, StoppedEarly: true, Waiting: 7},
			map[string]float64{"RunPartial": 1, "RunStoppedEarly": 1, "RunUnverified": 0, "Waiting": 7, "Failed": 0}},
		{"reads not verified", policy.RunSummary{Status: policy.RunPartial, Unverified: "reads not waited for"},
			map[string]float64{"RunPartial": 1, "RunStoppedEarly": 0, "RunUnverified": 1, "Waiting": 0, "Failed": 0}},
		{"writes failed", policy.RunSummary{Status: policy.RunPartial, ErrorCount: 2},
			map[string]float64{"RunPartial": 1, "RunStoppedEarly": 0, "RunUnverified": 0, "Waiting": 0, "Failed": 2}},
		{"success", policy.RunSummary{Status: policy.RunSuccess},
			map[string]float64{"RunSucceeded": 1, "RunPartial": 0, "RunStoppedEarly": 0, "RunUnverified": 0, "Waiting": 0}},
	} {
		got := map[string]float64{}
		for _, m := range lambda.RunMetrics("knue/policies", "main", c.sum, "req-1", time.Unix(0, 0)).Metrics {
			got[m.Name] = m.Value
		}
		for name, want := range c.want {
			if v, ok := got[name]; !ok || v != want {
				t.Errorf("%s: %s = %v (present %v), want %v", c.name, name, v, ok, want)
			}
		}
	}
}
