package syncer

import "github.com/knue/syncjob/internal/policy"

// orphansLeft counts the orphan queue entries a full run set out to remove
// (differ.RepairQueue) whose removal failed; nil when the run did not
// list the queue (not a full run, or it stopped before applying).
func orphansLeft(in readForPlan, orphans []string, failures []policy.Failure) *int {
	if in.reg.queued == nil {
		return nil
	}
	failed := map[string]bool{}
	for _, f := range failures {
		failed[f.PolicyName] = true
	}
	n := 0
	for _, name := range orphans {
		if failed[name] {
			n++
		}
	}
	return &n
}

// queueOrphans is what the summary says of orphan queue entries: what a
// full run left, or else what the last run said (only a full run lists
// the queue), so that status --check stays unhealthy until one removes
// them.
func queueOrphans(rep report) int {
	if rep.orphans != nil {
		return *rep.orphans
	}
	if rep.state.prev != nil {
		return rep.state.prev.QueueOrphans
	}
	return 0
}
