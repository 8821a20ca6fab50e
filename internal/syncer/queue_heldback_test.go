package syncer_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/syncer"
)

// deleteRefused refuses the Delete of chosen keys; every other call passes.
type deleteRefused struct {
	registry.Store
	mu   sync.Mutex
	keys map[string]bool
}

func (d *deleteRefused) Delete(ctx context.Context, keys []string) map[string]error {
	d.mu.Lock()
	out, pass := map[string]error{}, []string(nil)
	for _, k := range keys {
		if d.keys[k] {
			out[k] = errors.New("delete refused (5xx)")
		} else {
			pass = append(pass, k)
		}
	}
	d.mu.Unlock()
	for k, err := range d.Store.Delete(ctx, pass) {
		out[k] = err
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// queueAnnouncesOnlyPublished fails t for a queue entry announcing (no
// error) a version the registry does not hold, or one beside a dead letter
// of the same version.
func queueAnnouncesOnlyPublished(t *testing.T, r *rig, when string) {
	t.Helper()
	pol, dl := r.policies(), r.deadLetters()
	for name, e := range r.queueEntries() {
		if p, ok := pol[name]; e.ErrorMessage == nil && (!ok || p.SHA != e.SHA) {
			t.Errorf("%s: queue:%s announces %.7s, the registry holds %.7s: a version no one publishes", when, name, e.SHA, p.SHA)
		}
		if d, ok := dl[name]; ok && d.SHA == e.SHA {
			t.Errorf("%s: queue:%s (retries %d) beside dead-letter:%s of the same version", when, name, e.RetryCount, name)
		}
	}
}

// The third failure's dead letter lands, and the queue entry's removal
// fails (a kill there does the same): the queue kept the held-back
// version's fresh announcement for good, full runs leaving held-back names
// alone, and queue list and status showed it as plain work (an adversarial
// helper). The next full run rewrites it for the registry's version.
func TestQueue_DeadLetterLanded_EntryRemovalFailed_FullRunSettlesIt(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	d := &deleteRefused{Store: r.store}
	r.reg = registry.New(d)
	r.s.Registry = r.reg
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Commit("edit")
	r.store.FailKeys(map[string]error{"policy:가": errors.New("kv down")})
	for range 2 {
		_, _ = r.run(syncer.Options{})
	}
	d.keys = map[string]bool{"queue:가": true}
	_, _ = r.run(syncer.Options{})
	d.keys = nil
	r.store.FailKeys(nil)
	if _, ok := r.deadLetters()["가"]; !ok {
		t.Fatal("setup: no dead letter after the third failure")
	}
	if _, err := r.run(syncer.Options{Full: true}); err != nil && !errors.Is(err, syncer.ErrPartial) {
		t.Fatalf("full run: %v", err)
	}
	queueAnnouncesOnlyPublished(t, r, "after the full run")
	if q, ok := r.queueEntries()["가"]; ok && q.RetryCount != 0 {
		t.Errorf("queue:가 keeps a retry count (%d) the dead letter holds", q.RetryCount)
	}
}

// A dead letter holds v2 back; the file moves on to v3, and the superseded
// dead letter's removal fails. v3 landed, yet the run called it a failed
// write: its announcement became a failure record (a worker takes one for
// no work), its retry count went up, and the run said "1 failed" for the
// version it had published (an adversarial helper). The removal fails under
// its own key now: the policy's announcement and count are left alone, and
// the next full run removes the dead letter.
func TestDeadLetter_SupersededRemovalFails_PublishedVersionNotAFailure(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	r.repo.Write("a/가.md", "# 가 개정\n")
	r.repo.Commit("edit")
	failUntilDeadLetter(t, r, "가")
	r.repo.Write("a/가.md", "# 가 v3\n")
	r.repo.Commit("v3")
	r.store.FailKeys(map[string]error{"dead-letter:가": errors.New("kv 500")})
	res, _ := r.run(syncer.Options{})
	for _, f := range res.Summary.Failures {
		if f.PolicyName == "가" {
			t.Errorf("the published v3 counted failed: %+v", f)
		}
	}
	if q := r.queueEntries()["가"]; q.ErrorMessage != nil || q.RetryCount != 0 || q.SHA != r.policies()["가"].SHA {
		t.Errorf("queue:가 = %+v, want a clean announcement of the published version", q)
	}
	r.store.FailKeys(nil)
	if _, err := r.run(syncer.Options{Full: true}); err != nil {
		t.Fatalf("the next full run: %v", err)
	}
	if _, ok := r.deadLetters()["가"]; ok {
		t.Error("the superseded dead letter is left after a full run")
	}
	queueAnnouncesOnlyPublished(t, r, "after the full run")
}
