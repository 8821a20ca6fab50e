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
	Full       bool   // asked for (--full, a backfill event)
	Last, Head string // metadata:sync:lastCommit and the branch head
	Previous   *policy.RunSummary
	Pending    int // failed writes of earlier runs waiting for retry
	// Unclean says why the registry may differ from Last's tree in ways no
	// queue entry records (see Unclean); "" when the previous run ended
	// cleanly.
	Unclean           string
	Now               time.Time
	ReconcileInterval time.Duration
	// Reconciles says the run's trigger keeps the reconcile: the daily
	// schedule (and a CLI run, a laptop's schedule). A run by hand or by a
	// push webhook between two of them stays incremental.
	Reconciles bool
}

// reconcileSlack lets a daily schedule that fires a little early still
// reconcile: a full run is due once the last one is older than the
// interval less this.
const reconcileSlack = time.Hour

// Unclean says why the registry may not equal the tree of last (the stored
// lastCommit) plus what the queue records, or "" when the previous run ended
// cleanly: it left its lease behind (killed, or its record did not land);
// it failed after it began writing, or failed or was refused without
// knowing or mending an unclean registry it started from (prev.Dirty), or
// having read a lastCommit other than the stored one (a stale read); it
// stopped before its deadline with writes left (prev.StoppedEarly), or
// left writes for the write budget; or it recorded a success or
// a partial run of a commit that lastCommit does not hold (its lastCommit
// write was lost; a run that left changes waiting for the write budget
// keeps lastCommit on purpose). A compare from last would then miss what
// it half-wrote, or the drift a full run found.
func Unclean(prev *policy.RunSummary, last string, leaseLeftBehind bool) string {
	switch {
	case leaseLeftBehind:
		return "the previous run did not finish (it left its lease)"
	case prev == nil:
		return ""
	case prev.Dirty:
		return "the previous run failed after it began writing, or failed or was refused after one that left the registry unclean (or without reading whether one did)"
	case (prev.Status == policy.RunFailed || prev.Status == policy.RunRefused) && prev.PreviousCommitSHA != last:
		// A run that records no lastCommit read another than the stored
		// one: a read that lagged (Workers KV) a later run's writes. What
		// it carried of the record it read (what waits for retry: a failed
		// move is owed by name only) is an older run's, and its record
		// replaced the later run's (soak seed 10648).
		return "the previous run read an older lastCommit than the one stored, and its record replaced a later run's"
	case prev.StoppedEarly:
		// what waits may be drift a full run found, which no compare names
		return "the previous run stopped before its deadline"
	case prev.Unverified != "" && !prev.DryRun:
		// it trusted reads it should have waited for, and kept lastCommit
		return "the previous run could not wait out the registry's consistency window"
	case prev.Waiting > 0 && !prev.DryRun:
		// the same, left for another day; and an incremental run keeps
		// lastCommit, so a head that moves back (a force push, a revert)
		// leaves no compare naming what it published of its own head
		return "the previous run left changes waiting for the write budget"
	case (prev.Status == policy.RunSuccess || prev.Status == policy.RunPartial) && !prev.DryRun && prev.Waiting == 0 &&
		prev.CommitSHA != "" && prev.CommitSHA != last:
		return "the previous run's last commit was not recorded"
	}
	return ""
}

// ChooseMode decides how a run plans: full from the head tree, incremental
// from the compare Last...Head, or unchanged (nothing to do). A run after an
// unclean one is full. The reason says why a run is full (or "retry" for an
// incremental run on an unchanged head that retries failed writes).
func ChooseMode(in ModeInput) (mode, reason string) {
	switch {
	case in.Full:
		return ModeFull, "requested"
	case in.Last == "":
		return ModeFull, "first run"
	case in.Unclean != "":
		return ModeFull, in.Unclean
	case in.Previous == nil || in.Previous.LastFullRun == "":
		if in.Last == in.Head && in.Pending == 0 {
			return ModeUnchanged, ""
		}
		return ModeFull, "no full run recorded"
	}
	if t, err := time.Parse(time.RFC3339, in.Previous.LastFullRun); in.Reconciles && (err != nil || in.Now.Sub(t) > in.ReconcileInterval-min(reconcileSlack, in.ReconcileInterval/24)) {
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
