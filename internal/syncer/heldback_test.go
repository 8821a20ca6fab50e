package syncer_test

import (
	"context"
	"errors"
	"testing"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/syncer"
)

// unplannable is a Source whose compare and tree reads fail: a run stops
// before it plans.
type unplannable struct{ syncer.Source }

var errGitHubDown = errors.New("github down")

func (unplannable) Compare(context.Context, string, string) (policy.Changeset, error) {
	return policy.Changeset{}, errGitHubDown
}

func (unplannable) Tree(context.Context, string) ([]policy.File, error) { return nil, errGitHubDown }

// failUntilDeadLetter fails the writes of the names' entries until dead
// letters hold their versions back: three runs.
func failUntilDeadLetter(t *testing.T, r *rig, names ...string) {
	t.Helper()
	fail := map[string]error{}
	for _, name := range names {
		fail["policy:"+name] = errors.New("kv down")
	}
	r.store.FailKeys(fail)
	for range 3 {
		_, _ = r.run(syncer.Options{})
	}
	r.store.FailKeys(nil)
	for _, name := range names {
		if _, ok := r.deadLetters()[name]; !ok {
			t.Fatalf("no dead letter of %s after three failures", name)
		}
	}
}

// Found by the soak (seed 5, cloudflare): a run that stops before it plans
// recorded no held-back versions, so the next incremental run did not read
// the dead letter and exited success while it held back the head's
// version. A run that does not plan keeps what the last run knew.
func TestSoakRepro_AbortedBeforePlanning_KeepsHeldBack_NoFalseSuccess(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Commit("edit")
	failUntilDeadLetter(t, r, "가")
	r.repo.Write("b/라.md", "# 라\n")
	r.repo.Commit("add 라")
	src := r.s.Source
	r.s.Source = unplannable{src}
	if _, err := r.run(syncer.Options{}); !errors.Is(err, errGitHubDown) {
		t.Fatalf("run without GitHub: %v", err)
	}
	if held := r.lastRun().HeldBack; len(held) != 1 || held[0].PolicyName != "가" {
		t.Errorf("the aborted run recorded held back %v, want 가", held)
	}
	r.s.Source = src
	res, err := r.run(syncer.Options{})
	if !errors.Is(err, syncer.ErrPartial) || res.Summary.Status != policy.RunPartial {
		t.Errorf("after an aborted run: %v, status %s (mode %s), while dead-letter:가 holds back the head's version", err, res.Summary.Status, res.Summary.Mode)
	}
}
