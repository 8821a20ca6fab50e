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
