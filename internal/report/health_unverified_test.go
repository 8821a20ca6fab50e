package report

import (
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/policy"
)

// status --check after an unverified run (no time to wait out KV's
// window) is unhealthy and says why, naming MAX_DURATION, the setting that
// fixes it. Review: its reason read "partial: 0 failed".
func TestCheckHealth_UnverifiedRun_SaysWhy(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 25, 16, 0, 0, 0, time.UTC)
	why := "reads not waited for (...): the run's deadline leaves no time to wait out the registry's consistency window (1m0s) twice; set MAX_DURATION, or the Lambda's timeout, above that"
	rep := Status{
		LastRun:     &policy.RunSummary{Status: policy.RunPartial, Timestamp: "2026-11-25T15:00:00Z", Unverified: why},
		LastSuccess: "2026-11-25T14:00:00Z", SinceLastSuccess: "2h0m0s", LastSuccessAt: now.Add(-2 * time.Hour),
	}
	h := CheckHealth(rep, now, 26*time.Hour)
	if h.Healthy || !strings.Contains(h.Summary, "MAX_DURATION") {
		t.Errorf("after an unverified run: %q; want unhealthy, saying the reads were unverified and naming MAX_DURATION", h.Summary)
	}
}
