package report

import (
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/policy"
)

// status --check is unhealthy while the last run counts queue entries for
// policies that do not exist, and healthy again once a full run removed
// them.
func TestCheckHealth_QueueOrphansUnhealthy(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 25, 16, 0, 0, 0, time.UTC)
	rep := Status{
		LastRun:     &policy.RunSummary{Status: policy.RunSuccess, Timestamp: "2026-11-25T15:00:00Z", QueueOrphans: 2},
		LastSuccess: "2026-11-25T15:00:00Z", SinceLastSuccess: "1h0m0s", LastSuccessAt: now.Add(-time.Hour),
	}
	h := CheckHealth(rep, now, 26*time.Hour)
	if h.Healthy || !strings.Contains(h.Summary, "2 queue entries announce policies that do not exist") {
		t.Errorf("with 2 orphans: %+v, want unhealthy naming them", h)
	}
	rep.LastRun.QueueOrphans = 0
	if h := CheckHealth(rep, now, 26*time.Hour); !h.Healthy {
		t.Errorf("after the repair: %+v, want healthy", h)
	}
}

// An unhealthy partial run whose summary has no error text names its
// failures (the first five), not only their count (review: a foreign
// mirror key was only "1 failed").
func TestCheckHealth_PartialNamesItsFailures(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 25, 16, 0, 0, 0, time.UTC)
	var fs []policy.Failure
	for _, n := range []string{"가", "policies/x/../../y/policy.md", "다", "라", "마", "바"} {
		fs = append(fs, policy.Failure{PolicyName: n, Error: "boom"})
	}
	rep := Status{
		LastRun:     &policy.RunSummary{Status: policy.RunPartial, Timestamp: "2026-11-25T15:00:00Z", ErrorCount: len(fs), Failures: fs},
		LastSuccess: "2026-11-25T14:00:00Z", SinceLastSuccess: "2h0m0s", LastSuccessAt: now.Add(-2 * time.Hour),
	}
	h := CheckHealth(rep, now, 26*time.Hour)
	if h.Healthy || !strings.Contains(h.Summary, "6 failed (가, policies/x/../../y/policy.md, 다, 라, 마, …)") {
		t.Errorf("check: %s", h.Summary)
	}
}
