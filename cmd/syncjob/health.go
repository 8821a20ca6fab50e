package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/knue/syncjob/internal/policy"
)

// health is the verdict of "syncjob status --check".
type health struct {
	Healthy  bool     `json:"healthy"`
	Problems []string `json:"problems,omitempty"`
	Summary  string   `json:"summary"`
}

// String is the check's one line: "healthy: ..." or "unhealthy: ...".
func (h health) String() string { return h.Summary }

// checkHealth is healthy when the last run succeeded, the last success is
// younger than maxAge (a daily schedule plus slack; STATUS_MAX_AGE), and no
// dead letter holds a version back (it waits for a person).
func checkHealth(rep statusReport, now time.Time, maxAge time.Duration) health {
	var problems []string
	switch lr := rep.LastRun; {
	case lr == nil:
		problems = append(problems, "no run recorded")
	case lr.Status != policy.RunSuccess:
		why := lr.Error
		if why == "" {
			why = fmt.Sprintf("%d failed", lr.ErrorCount)
		}
		problems = append(problems, fmt.Sprintf("the last run (%s) is %s: %s", lr.Timestamp, lr.Status, why))
	}
	switch {
	case rep.LastSuccess == "":
		problems = append(problems, "no successful run in the run history")
	case now.Sub(rep.lastSuccess) > maxAge:
		problems = append(problems, fmt.Sprintf("the last success (%s) is %s old, more than %s (STATUS_MAX_AGE)", rep.LastSuccess, rep.SinceLastSuccess, maxAge))
	}
	if lr := rep.LastRun; lr != nil && lr.QueueOrphans > 0 {
		problems = append(problems, fmt.Sprintf("%s announce policies that do not exist (the next full run removes them: syncjob sync --full)", count(lr.QueueOrphans, "queue entry", "queue entries")))
	}
	if n := len(rep.DeadLetters) + len(rep.UnreadableDeadLetters); n > 0 {
		var names []string
		for _, d := range rep.DeadLetters {
			names = append(names, d.PolicyName)
		}
		names = append(names, rep.UnreadableDeadLetters...)
		problems = append(problems, fmt.Sprintf("%s hold back versions: %s (syncjob deadletter list)", count(n, "dead letter", "dead letters"), strings.Join(names, ", ")))
	}
	if len(problems) > 0 {
		return health{Problems: problems, Summary: "unhealthy: " + strings.Join(problems, "; ")}
	}
	return health{Healthy: true, Summary: fmt.Sprintf("healthy: the last run succeeded, the last success was %s ago, nothing is held back", rep.SinceLastSuccess)}
}
