package lambda

import (
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/knue/syncjob/internal/emf"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/redact"
)

// MetricsNamespace is the CloudWatch namespace of the EMF line; the alarms
// of infra/template.yaml read it.
const MetricsNamespace = "syncjob"

// RunMetrics is the EMF line of one run: its counts, its duration and one
// RunSucceeded/RunFailed/RunPartial count, so that alarms need neither an SDK
// nor a metric filter.
func RunMetrics(repo, branch string, s policy.RunSummary, requestID string, at time.Time) emf.Line {
	c := func(name string, v int) emf.Metric { return emf.Metric{Name: name, Unit: emf.Count, Value: float64(v)} }
	line := emf.Line{
		Namespace:  MetricsNamespace,
		Dimensions: map[string]string{"Repo": repo},
		Metrics: []emf.Metric{
			c("Added", s.Added),
			c("Updated", s.Updated),
			c("Moved", s.Moved),
			c("Deleted", s.Deleted),
			c("Unchanged", s.Unchanged),
			c("Skipped", len(s.Skipped)),
			c("Conflicts", len(s.Conflicts)),
			c("Failed", s.ErrorCount),
			// versions held back by dead letters, each waiting for a person
			c("HeldBack", len(s.HeldBack)),
			// items the daily write budget or the deadline left for a later run
			c("Waiting", s.Waiting),
			c("GitHubRequests", int(s.Requests["github"])),
			c("RegistryRequests", int(s.Requests["registry"]+s.Requests["cloudflare"])),
			c("CloudflareRequests", int(s.Requests["cloudflare"])),
			c("BillableWrites", int(s.BillableWrites)),
			c("BillableDeletes", int(s.BillableDeletes)),
			{Name: "DurationMs", Unit: emf.Milliseconds, Value: float64(s.DurationMs)},
		},
		Properties: map[string]any{
			slog.MessageKey:  "run metrics",
			logkey.RunID:     s.RunID,
			logkey.Trigger:   s.Trigger,
			logkey.RequestID: requestID,
			logkey.Status:    s.Status,
			logkey.Mode:      s.Mode,
			logkey.Branch:    branch,
			logkey.Commit:    s.CommitSHA,
			logkey.Previous:  s.PreviousCommitSHA,
			logkey.Timestamp: s.Timestamp,
		},
		Time: at,
	}
	line.Metrics = append(line.Metrics, statusMetrics(s)...)
	line.Metrics = append(line.Metrics, mirrorMetrics(s)...)
	for _, phase := range slices.Sorted(maps.Keys(s.PhasesMs)) { // PhaseReadMs, PhasePlanMs, ...
		name := "Phase" + strings.ToUpper(phase[:1]) + phase[1:] + "Ms"
		line.Metrics = append(line.Metrics, emf.Metric{Name: name, Unit: emf.Milliseconds, Value: float64(s.PhasesMs[phase])})
	}
	return line
}

// statusMetrics are one RunSucceeded/RunFailed/RunRefused/RunPartial
// count, and why a run is partial when nothing failed.
func statusMetrics(s policy.RunSummary) []emf.Metric {
	c := func(name string, b bool) emf.Metric {
		v := 0.0
		if b {
			v = 1
		}
		return emf.Metric{Name: name, Unit: emf.Count, Value: v}
	}
	return []emf.Metric{
		c("RunSucceeded", s.Status == policy.RunSuccess),
		// a refused run waits for a person as a failed one does
		c("RunFailed", s.Status == policy.RunFailed || s.Status == policy.RunRefused),
		c("RunRefused", s.Status == policy.RunRefused),
		c("RunPartial", s.Status == policy.RunPartial),
		// it stopped before its deadline, or trusted reads it could not wait
		// to verify (the next run is full; every run stays so while
		// MAX_DURATION is under two consistency windows)
		c("RunStoppedEarly", s.StoppedEarly),
		c("RunUnverified", s.Unverified != ""),
	}
}

// writeMetrics prints the run's EMF line as one raw line: Lambda forwards it
// to CloudWatch Logs, which extracts the metrics.
func (h *Handler) writeMetrics(logger *slog.Logger, job Job, s policy.RunSummary, requestID string, timedOut bool) {
	line := RunMetrics(job.Repo, job.Branch, s, requestID, h.now())
	timeouts := 0.0
	if timedOut {
		timeouts = 1 // the run stopped for the Lambda timeout: a RunFailed too, with this cause
	}
	line.Metrics = append(line.Metrics, emf.Metric{Name: "RunTimedOut", Unit: emf.Count, Value: timeouts})
	b, err := line.Marshal()
	if err != nil {
		logger.Error("metrics not written", logkey.Error, err)
		return
	}
	b = []byte(redact.String(string(b), job.Secrets...))
	if _, err := h.logs.Write(append(b, '\n')); err != nil {
		logger.Error("metrics not written", logkey.Error, err)
	}
}

// mirrorMetrics are the content mirror's counts of a run; none without a
// mirror.
func mirrorMetrics(s policy.RunSummary) []emf.Metric {
	m := s.Mirror
	if m == nil {
		return nil
	}
	c := func(name string, v int64) emf.Metric {
		return emf.Metric{Name: name, Unit: emf.Count, Value: float64(v)}
	}
	return []emf.Metric{
		c("MirrorRequests", s.Requests["mirror"]),
		c("MirrorUploaded", int64(m.Uploaded)),
		c("MirrorDeleted", int64(m.Deleted)),
		c("MirrorRepaired", int64(m.Repaired)),
		c("MirrorBytesUploaded", int64(m.BytesUploaded)),
	}
}
