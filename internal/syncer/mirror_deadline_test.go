package syncer_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/mirror/mirrortest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/syncer"
)

// An upload to the content mirror that the run's deadline cuts, or that
// the run has no time left to start, waits for the next run as a registry
// write the deadline cuts does (deadline.go): no failure, no retry
// counted, the run partial and stopped early, naming it.

// syncedWithAMirror is a rig whose seed is synced into an in-memory
// mirror.
func syncedWithAMirror(t *testing.T) (*rig, *mirrortest.Memory) {
	t.Helper()
	r := newRig(t)
	m := mirrortest.NewMemory(prefix)
	r.withMirror(m)
	r.seed()
	r.mustRun()
	return r, m
}

// slowPut is a mirror whose upload of one key takes until the run's
// deadline: a slow R2 near the end of a Lambda invocation.
type slowPut struct {
	*mirrortest.Memory
	key string
}

func (s slowPut) Put(ctx context.Context, o mirror.Object) (string, error) {
	if o.Key == s.key {
		<-ctx.Done()
		return "", ctx.Err()
	}
	return s.Memory.Put(ctx, o)
}

// Review: the cut upload was counted as the policy's failure (its queue
// entry's retryCount moved). It waits, named, and the next run uploads and
// publishes it.
func TestMirrorDeadline_UploadCut_WaitsNotFails_NextRunPublishes(t *testing.T) {
	t.Parallel()
	r, m := syncedWithAMirror(t)
	before := r.policies()["가"]
	r.edit가()
	r.s.Mirror = slowPut{Memory: m, key: mirror.Key(prefix, "가")}
	res, err := r.run(syncer.Options{MaxDuration: 500 * time.Millisecond})
	sum := res.Summary
	t.Logf("err = %v; status %s, failures %+v, waiting %d %v", err, sum.Status, sum.Failures, sum.Waiting, sum.WaitingNames)
	if len(sum.Failures) > 0 {
		t.Errorf("a deadline-cut upload is reported as failures %+v", sum.Failures)
	}
	if q := r.queueEntries()["가"]; q.RetryCount > 0 {
		t.Errorf("queue:가 counts %d failed attempts for an upload the deadline cut (%v)", q.RetryCount, *q.ErrorMessage)
	}
	if sum.Status != policy.RunPartial || !sum.StoppedEarly || !slices.Contains(sum.WaitingNames, "가") {
		t.Errorf("status %s, stopped early %v, waiting %v: want partial, stopped early, naming 가", sum.Status, sum.StoppedEarly, sum.WaitingNames)
	}
	r.s.Mirror = m
	res, err = r.run(syncer.Options{})
	if err != nil {
		t.Fatalf("the next run: %v", err)
	}
	if after := r.policies()["가"]; after.SHA == before.SHA {
		t.Errorf("the next run left 가 at its old version %s", after.SHA)
	}
	r.mirrorIsHead(m, map[string]string{"a/가.md": "# 가\n\n둘째 판\n", "a/나.md": "# 나\n", "b/다.md": "# 다\n"}, res)
}

// Review: three runs so cut made the version a dead letter, held back
// until a person retries it.
func TestMirrorDeadline_UploadCutThrice_NoDeadLetter(t *testing.T) {
	t.Parallel()
	r, m := syncedWithAMirror(t)
	r.edit가()
	r.s.Mirror = slowPut{Memory: m, key: mirror.Key(prefix, "가")}
	for range 3 {
		_, _ = r.run(syncer.Options{MaxDuration: 300 * time.Millisecond})
	}
	if d, ok := r.deadLetters()["가"]; ok {
		t.Errorf("three runs whose deadline cut 가's upload made it a dead letter: %+v", d)
	}
}

// puttingUntilLate is a mirror whose upload of one key returns only once
// the run is out of time (less than late before its deadline), and that
// records every key it is asked to put.
type puttingUntilLate struct {
	*mirrortest.Memory
	key  string
	late time.Duration
	mu   sync.Mutex
	put  []string
}

func (p *puttingUntilLate) Put(ctx context.Context, o mirror.Object) (string, error) {
	p.mu.Lock()
	p.put = append(p.put, o.Key)
	p.mu.Unlock()
	if d, ok := ctx.Deadline(); ok && o.Key == p.key {
		time.Sleep(time.Until(d) - p.late)
	}
	return p.Memory.Put(ctx, o)
}

// Review: the apply step's uploads (here a move's) were started when the
// run was already out of time. None is: the move waits, named.
func TestMirrorDeadline_OutOfTime_StartsNoUpload_MoveWaits(t *testing.T) {
	t.Parallel()
	r, m := syncedWithAMirror(t)
	r.repo.Write("a/가.md", "# 가\n\n둘째 판\n")
	r.repo.Remove("a/나.md")
	r.repo.Write("c/나.md", "# 나\n")
	r.repo.Commit("edit 가, move 나")
	p := &puttingUntilLate{Memory: m, key: mirror.Key(prefix, "가"), late: 20 * time.Millisecond}
	r.s.Mirror = p
	res, err := r.run(syncer.Options{MaxDuration: 500 * time.Millisecond}) // StopBefore 50ms
	sum := res.Summary
	t.Logf("err = %v; status %s, failures %+v, waiting %v; put %v", err, sum.Status, sum.Failures, sum.WaitingNames, p.put)
	if slices.Contains(p.put, mirror.Key(prefix, "나")) {
		t.Errorf("the run out of time still uploaded 나's object")
	}
	if len(sum.Failures) > 0 || !slices.Contains(sum.WaitingNames, "나") {
		t.Errorf("failures %+v, waiting %v: want none failed, 나 waiting", sum.Failures, sum.WaitingNames)
	}
}

// slowDelete is a mirror whose delete of one key takes until the run's
// deadline.
type slowDelete struct {
	*mirrortest.Memory
	key string
}

func (s slowDelete) Delete(ctx context.Context, keys []string) (map[string]error, error) {
	if slices.Contains(keys, s.key) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.Memory.Delete(ctx, keys)
}

// A mirror delete the run's deadline cuts waits for the next run, as an
// upload so cut does: no failure counted (three would make a dead letter
// of a deleted policy), the run partial and stopped early naming it, and
// the next run removes the object.
func TestMirrorDeadline_DeleteCut_WaitsNotFails_NextRunRemovesTheObject(t *testing.T) {
	t.Parallel()
	r, m := syncedWithAMirror(t)
	r.repo.Remove("a/가.md")
	r.repo.Commit("delete 가")
	r.s.Mirror = slowDelete{Memory: m, key: mirror.Key(prefix, "가")}
	res, err := r.run(syncer.Options{MaxDuration: 500 * time.Millisecond})
	sum := res.Summary
	t.Logf("err = %v; status %s, failures %+v, waiting %v", err, sum.Status, sum.Failures, sum.WaitingNames)
	if len(sum.Failures) > 0 || r.queueEntries()["가"].RetryCount > 0 {
		t.Errorf("a deadline-cut delete is reported as failures %+v", sum.Failures)
	}
	if sum.Status != policy.RunPartial || !sum.StoppedEarly || !slices.Contains(sum.WaitingNames, "가") {
		t.Errorf("status %s, stopped early %v, waiting %v: want partial, stopped early, naming 가", sum.Status, sum.StoppedEarly, sum.WaitingNames)
	}
	r.s.Mirror = m
	res, err = r.run(syncer.Options{})
	if err != nil {
		t.Fatalf("the next run: %v", err)
	}
	r.mirrorIsHead(m, map[string]string{"a/나.md": "# 나\n", "b/다.md": "# 다\n"}, res)
}
