package syncer

import (
	"context"
	"fmt"
	"strings"

	"github.com/knue/syncjob/internal/differ"
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
// A run within the consistency window of a deliberate retarget may read
// the lastRun from before it and record the old branch again: the next
// runs of the new branch are refused until one passes --allow-rewind
// again (docs/design.md, "Stale reads"). Refusing is the safe side: a
// reviewer broke each way of telling such a record apart (the commit
// graph let a feature branch cut from main's tip through).
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
