package differ

import (
	"time"

	"github.com/knue/syncjob/internal/policy"
)

// Modes of a run.
const (
	ModeFull        = "full"
	ModeIncremental = "incremental"
	ModeUnchanged   = "unchanged"
)

// ModeInput is what decides a run's mode.
type ModeInput struct {
	Full              bool   // asked for (--full, a backfill event)
	Last, Head        string // metadata:sync:lastCommit and the branch head
	Previous          *policy.RunSummary
	Pending           int // failed writes of earlier runs waiting for retry
	Now               time.Time
	ReconcileInterval time.Duration
}

// ChooseMode decides how a run plans: full from the head tree, incremental
// from the compare Last...Head, or unchanged (nothing to do). The reason
// says why a run is full (or "retry" for an incremental run on an unchanged
// head that retries failed writes).
func ChooseMode(in ModeInput) (mode, reason string) {
	switch {
	case in.Full:
		return ModeFull, "requested"
	case in.Last == "":
		return ModeFull, "first run"
	case in.Previous == nil || in.Previous.LastFullRun == "":
		if in.Last == in.Head && in.Pending == 0 {
			return ModeUnchanged, ""
		}
		return ModeFull, "no full run recorded"
	}
	if t, err := time.Parse(time.RFC3339, in.Previous.LastFullRun); err != nil || in.Now.Sub(t) > in.ReconcileInterval {
		return ModeFull, "reconcile interval passed"
	}
	switch {
	case in.Last != in.Head:
		return ModeIncremental, ""
	case in.Pending > 0:
		return ModeIncremental, "retry"
	}
	return ModeUnchanged, ""
}
