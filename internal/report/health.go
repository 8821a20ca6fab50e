package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/knue/syncjob/internal/policy"
)

// Health is the verdict of "syncjob status --check".
type Health struct {
	Healthy  bool     `json:"healthy"`
	Problems []string `json:"problems,omitempty"`
	Summary  string   `json:"summary"`
}

// String is the check's one line: "healthy: ..." or "unhealthy: ...".
func (h Health) String() string { return h.Summary }

// CheckHealth is healthy when the last run succeeded, the last success is
// younger than maxAge (a daily schedule plus slack; STATUS_MAX_AGE), no run
// after it left its lease unfinished, and no dead letter holds a version
// back (it waits for a person).
func CheckHealth(rep Status, now time.Time, maxAge time.Duration) Health {
	var problems []string
	switch lr := rep.LastRun; {
	case lr == nil:
		problems = append(problems, "no run recorded")
	case lr.Status != policy.RunSuccess:
		why := lr.Error
		switch {
		case why != "":
		case lr.ErrorCount == 0 && lr.Unverified != "":
			why = lr.Unverified
		default:
			why = fmt.Sprintf("%d failed%s", lr.ErrorCount, failedNames(lr.Failures))
		}
		why = strings.TrimPrefix(why, lr.Status+": ") // "refused: daily write budget: …" (differ.RefusedBy)
		problems = append(problems, fmt.Sprintf("the last run (%s) is %s: %s", lr.Timestamp, lr.Status, why))
	}
	switch {
	case rep.LastSuccess == "":
		problems = append(problems, "no successful run in the run history")
	case now.Sub(rep.LastSuccessAt) > maxAge:
		problems = append(problems, fmt.Sprintf("the last success (%s) is %s old, more than %s (STATUS_MAX_AGE)", rep.LastSuccess, rep.SinceLastSuccess, maxAge))
	}
	if l := rep.Lease; Unfinished(l, rep.LeaseExpired, rep.LastRun) {
		problems = append(problems, fmt.Sprintf("the run that took the lease at %s (%s) did not finish: the registry may be half-written until the next run, which plans from the head tree", l.AcquiredAt, l.Owner))
	}
	if lr := rep.LastRun; lr != nil && lr.QueueOrphans > 0 {
		problems = append(problems, fmt.Sprintf("%s announce policies that do not exist (the next full run removes them: syncjob sync --full)", Count(lr.QueueOrphans, "queue entry", "queue entries")))
	}
	if n := len(rep.DeadLetters) + len(rep.UnreadableDeadLetters); n > 0 {
		var names []string
		for _, d := range rep.DeadLetters {
			names = append(names, d.PolicyName)
		}
		names = append(names, rep.UnreadableDeadLetters...)
		verb := "hold"
		if n == 1 {
			verb = "holds"
		}
		problems = append(problems, fmt.Sprintf("%s %s back versions: %s (syncjob deadletter list)", Count(n, "dead letter", "dead letters"), verb, strings.Join(names, ", ")))
	}
	if n := len(rep.UnreadablePolicies); n > 0 {
		problems = append(problems, fmt.Sprintf("%s unreadable in the registry: %s (syncjob sync --full writes again those the head has; the others are kept, not ours to delete: remove them by hand)", Count(n, "policy value", "policy values"), strings.Join(rep.UnreadablePolicies, ", ")))
	}
	if len(problems) > 0 {
		return Health{Problems: problems, Summary: "unhealthy: " + strings.Join(problems, "; ")}
	}
	return Health{Healthy: true, Summary: fmt.Sprintf("healthy: the last run succeeded, the last success was %s ago, nothing is held back", rep.SinceLastSuccess)}
}

// failedNames names the first few failures, for the check's one line
// (the run's summary names them all).
func failedNames(fs []policy.Failure) string {
	var names []string
	for _, f := range fs {
		if len(names) == 5 {
			names = append(names, "…")
			break
		}
		names = append(names, f.PolicyName)
	}
	if len(names) == 0 {
		return ""
	}
	return " (" + strings.Join(names, ", ") + ")"
}
