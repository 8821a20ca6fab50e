package syncer_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/mirror/mirrortest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/syncer"
)

// s3Mirror is the S3 target on srv, retries not waiting.
func s3Mirror(t *testing.T, srv *mirrortest.S3Server) *mirror.S3 {
	t.Helper()
	s, err := mirror.NewS3(context.Background(), mirror.Config{
		Bucket: mirrortest.Bucket, Endpoint: srv.URL, Prefix: prefix,
		AccessKeyID: mirrortest.AccessKeyID, SecretAccessKey: mirrortest.SecretAccessKey,
		HTTPClient: srv.Client, MaxRetries: 2, TryTimeout: 20 * time.Second,
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The R2 token is rotated (or the bucket deleted) after the mirror was
// filled: every upload of the next runs is refused with 403. That is the
// configuration (mirror.ErrAccessDenied matches policy.ErrConfig): each
// run fails as a configuration error (exit 2) naming the keys, moving no
// retry count, as a run whose every write fails is an outage, not item
// failures (DESIGN.md, step 6). Review: each run was partial (exit 3),
// the refused policy's retryCount moved, and the third run dead-lettered
// it, so that once the key was fixed the version stayed held back until
// an operator ran `deadletter retry --all`.
func TestMirror_CredentialsRefused_ConfigErrorNotDeadLetters(t *testing.T) {
	t.Parallel()
	srv := mirrortest.NewS3Server(t)
	r := newRig(t).withMirror(s3Mirror(t, srv))
	r.seed()
	r.mustRun()
	r.repo.Write("a/가.md", "# 가\n\n새 판\n")
	r.repo.Commit("edit")
	before := r.policies()["가"]
	srv.Faults.FailNext(mirrortest.OpPut, 1000, http.StatusForbidden)
	for i := range 3 {
		res, err := r.run(syncer.Options{})
		t.Logf("run %d: %v (mode %s)", i+1, err, res.Summary.Mode)
		if !errors.Is(err, policy.ErrConfig) {
			t.Errorf("run %d with every upload refused 403: %v; want a configuration error (exit 2)", i+1, err)
		}
		if err != nil && !strings.Contains(err.Error(), "CONTENT_ACCESS_KEY_ID") {
			t.Errorf("run %d: %v; want CONTENT_ACCESS_KEY_ID named", i+1, err)
		}
	}
	if q := r.queueEntries()["가"]; q.RetryCount != 0 {
		t.Errorf("queue:가 retryCount %d: a refused credential counted as the policy's failure", q.RetryCount)
	}
	if d, ok := r.deadLetters()["가"]; ok {
		t.Errorf("가 dead-lettered by a configuration error: %+v", d)
	}
	if got := r.policies()["가"]; got.SHA != before.SHA {
		t.Errorf("가 published without its text: %+v", got)
	}
	srv.Faults.StopFailing(mirrortest.OpPut) // the key is fixed
	if _, err := r.run(syncer.Options{}); err != nil {
		t.Fatalf("run after the key is fixed: %v", err)
	}
	if got := r.policies()["가"]; got.SHA == before.SHA {
		t.Errorf("가 not published once the key is fixed")
	}
}

// R2 down (503 on every upload) for three runs in a row: every write the
// run made failed, which DESIGN.md (step 6) calls an outage — the run
// failed, no retry count moved. Review: each run was partial and counted
// an attempt, the third dead-lettered the policy, which then stayed held
// back after R2 recovered until an operator ran `deadletter retry`.
func TestMirror_DownEveryUploadFails_OutageNotDeadLetter(t *testing.T) {
	t.Parallel()
	srv := mirrortest.NewS3Server(t)
	r := newRig(t).withMirror(s3Mirror(t, srv))
	r.seed()
	r.mustRun()
	r.repo.Write("a/가.md", "# 가\n\n새 판\n")
	r.repo.Commit("edit")
	before, synced := r.policies()["가"], r.lastCommit()
	srv.Faults.FailNext(mirrortest.OpPut, 1000, http.StatusServiceUnavailable)
	for i := range 3 {
		res, err := r.run(syncer.Options{})
		if !errors.Is(err, syncer.ErrOutage) {
			t.Errorf("run %d with every upload 503: %v; want an outage", i+1, err)
		}
		if res.Summary.Status != policy.RunFailed || r.lastCommit() != synced {
			t.Errorf("run %d: status %s, lastCommit %s; want failed, %s kept", i+1, res.Summary.Status, r.lastCommit(), synced)
		}
	}
	if got := r.policies()["가"]; got.SHA != before.SHA {
		t.Errorf("가 published without its text: %+v", got)
	}
	if d, ok := r.deadLetters()["가"]; ok {
		t.Errorf("가 dead-lettered by an R2 outage: %s", d.Reason)
	}
	if q, ok := r.queueEntries()["가"]; ok && q.RetryCount != 0 {
		t.Errorf("queue:가 retryCount %d: an outage counted as the policy's failure", q.RetryCount)
	}
	srv.Faults.StopFailing(mirrortest.OpPut) // R2 is back
	if _, err := r.run(syncer.Options{}); err != nil {
		t.Fatalf("run after R2 is back: %v", err)
	}
	if got := r.policies()["가"]; got.SHA == before.SHA {
		t.Errorf("가 not published once R2 is back: %+v", got)
	}
	if body, _, _ := srv.ReadRaw(t, mirror.Key(prefix, "가")); !strings.Contains(string(body), "새 판") {
		t.Errorf("the mirror holds %q once R2 is back", body)
	}
}

// A store that refuses an object for its own sake (mirror.ErrRejected: a
// 4xx about the request) is no outage even when it is the run's only
// upload: the failure is the policy's, queued and retried.
func TestMirror_OnlyUploadRejectedForItsObject_PolicyQueued(t *testing.T) {
	t.Parallel()
	m := mirrortest.NewMemory(prefix)
	r := newRig(t).withMirror(m)
	r.seed()
	r.mustRun()
	r.repo.Write("a/가.md", "# 가\n\n새 판\n")
	r.repo.Commit("edit")
	m.FailPut(mirror.Key(prefix, "가"), fmt.Errorf("%w: 400 InvalidArgument", mirror.ErrRejected))
	if _, err := r.run(syncer.Options{}); !errors.Is(err, syncer.ErrPartial) {
		t.Fatalf("run: %v, want partial", err)
	}
	if q := r.queueEntries()["가"]; q.RetryCount != 1 {
		t.Errorf("queue:가 retryCount %d, want 1", q.RetryCount)
	}
}
