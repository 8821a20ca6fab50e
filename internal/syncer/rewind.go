package syncer

import (
	"context"
	"fmt"
	"strings"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
)

// ErrRewind refuses a run whose head is behind the synced commit, or whose
// repository or branch is not the one the registry was synced from: a
// GITHUB_BRANCH pointing at a stale branch would otherwise replace the
// registry with that branch's policies. Options.AllowRewind lets it through.
var ErrRewind = differ.RefusedBy("rewind or retarget")

// checkTarget refuses, before the lease, a run of another repository or
// branch than the one the registry was synced from: the last run's
// (lastRun.repo and branch), which a failed or refused run carries from
// the run before it (targetOf), so that a refusal holds for every run of
// the wrong setting, not the first only (an adversarial helper found the
// second run, or Lambda's retry of the first, syncing the wrong branch).
// On a registry whose reads lag, the lastRun a run reads within the
// consistency window of a deliberate retarget may be from before it: the
// run waits the window out and reads the state again before it refuses
// (settleTarget), for a refusal on the stale record would record the old
// branch again and lock every later run of the new one out (review).
func (r *run) checkTarget(st state) error {
	prev := st.prev
	if r.opt.AllowRewind || prev == nil || prev.Repo == "" {
		return nil
	}
	if strings.EqualFold(prev.Repo, r.Repo) && prev.Branch == r.Branch {
		return nil
	}
	return fmt.Errorf("%w: the registry was synced from %s branch %s, not %s branch %s (--allow-rewind or ALLOW_REWIND=yes to sync it from here)",
		ErrRewind, prev.Repo, prev.Branch, r.Repo, r.Branch)
}

// checkRewind refuses a full run whose head is behind the synced commit
// (one request; an incremental run learns it from its compare). A diverged
// head (a force-push) is not refused: it is a full run.
func (r *run) checkRewind(ctx context.Context, st state, cs *policy.Changeset) error {
	if cs != nil || r.opt.AllowRewind || st.last == "" || st.last == st.head {
		return nil
	}
	rel, err := r.Source.Relation(ctx, st.last, st.head)
	if err != nil {
		return err
	}
	if rel == "behind" {
		return r.rewound(st)
	}
	return nil
}

// rewound is the refusal of a head behind the synced commit.
func (r *run) rewound(st state) error {
	return fmt.Errorf("%w: the branch head %s is behind the synced commit %s: syncing it would undo what the registry holds (--allow-rewind or ALLOW_REWIND=yes to sync it anyway)",
		ErrRewind, st.head, st.last)
}

// waitsForTarget says whether a run refused for another target waits out
// the consistency window and reads the state again first: on a registry
// whose reads lag, unless it is a dry run (it records nothing, so a stale
// refusal locks nothing out) or its deadline leaves no time to wait and
// still run (it refuses on what it read; a later run reads afresh, unless
// this one's record is the stale one: then --allow-rewind once more).
func (r *run) waitsForTarget(ctx context.Context) bool {
	return r.Registry.EventuallyConsistent() && !r.opt.DryRun && r.timeToWait(ctx)
}

// settleTarget waits out the consistency window, before the lease (it
// writes nothing), and reads the state again, head and all: every write
// made before the wait is visible then.
func (r *run) settleTarget(ctx context.Context) (state, error) {
	r.log.Info("waiting out the consistency window", logkey.Reason, "the registry names another repository or branch: its record may predate a retarget", logkey.Wait, r.opt.ConsistencyWindow)
	if err := r.sleep(ctx, r.opt.ConsistencyWindow); err != nil {
		return state{}, err
	}
	return r.readState(ctx)
}

// targetOf is the repository and branch a run's record names: what the
// registry was synced from after it. A run that succeeded or is partial
// applied its plan from its own. A failed or refused one synced nothing
// whole, so the registry is still the last run's, as that names it; none
// when the registry, read, held no lastRun nor lastCommit (nothing was
// ever synced: review, a failed first sync of a wrong branch refused the
// right one); its own when the state could not be read or named no run
// (review: naming none then let a wrong branch through).
func targetOf(sum policy.RunSummary, st state, repo, branch string) (string, string) {
	switch {
	case sum.Status != policy.RunFailed && sum.Status != policy.RunRefused:
		return repo, branch
	case st.prev != nil:
		return st.prev.Repo, st.prev.Branch
	case st.read && st.last == "":
		return "", ""
	}
	return repo, branch
}
