package syncer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
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
	return s3MirrorVia(t, srv, srv.Client)
}

// s3MirrorVia is s3Mirror reached through client.
func s3MirrorVia(t *testing.T, srv *mirrortest.S3Server, client *http.Client) *mirror.S3 {
	t.Helper()
	s, err := mirror.NewS3(context.Background(), mirror.Config{
		Bucket: mirrortest.Bucket, Endpoint: srv.URL, Prefix: prefix,
		AccessKeyID: mirrortest.AccessKeyID, SecretAccessKey: mirrortest.SecretAccessKey,
		HTTPClient: client, MaxRetries: 2, TryTimeout: 20 * time.Second,
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
// failures (docs/design.md, "One run", step 9). Review: each run was partial (exit 3),
// the refused policy's retryCount moved, and the third run dead-lettered
// it, so that once the key was fixed the version stayed held back until
// an operator ran `deadletter retry --all`.
func TestMirror_CredentialsRefused_ConfigErrorNotDeadLetters(t *testing.T) {
	t.Parallel()
	r, srv, before := editWithEveryUploadFailing(t, http.StatusForbidden)
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
// run made failed, which docs/design.md ("One run", step 9) calls an outage — the run
// failed, no retry count moved. Review: each run was partial and counted
// an attempt, the third dead-lettered the policy, which then stayed held
// back after R2 recovered until an operator ran `deadletter retry`.
func TestMirror_DownEveryUploadFails_OutageNotDeadLetter(t *testing.T) {
	t.Parallel()
	r, srv, before := editWithEveryUploadFailing(t, http.StatusServiceUnavailable)
	synced := r.lastCommit()
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
	r, m := syncedMirroredRig(t)
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

// A folder mirror whose prefix holds a stray file where a new policy's
// folder must go (policies/라, a foreign object): the folder refuses that
// one object (ENOTDIR), for its own sake. It is the run's only upload:
// 라's failure (partial), the rest applied, and a full run removes the
// stray file and then uploads 라. Review: storeDown took it for the store
// down, every run was an outage, the same commit's delete of 다 was never
// applied, and the full run that would delete the stray file stopped
// before its deletes, so it never cleared.
func TestMirrorOutage_FolderOnlyUploadRefusedForItsPath_PolicyFailsNotOutage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f, err := mirror.NewFolder(dir, prefix)
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t).withMirror(f)
	r.seed()
	r.mustRun()
	if err := os.WriteFile(filepath.Join(dir, "policies", "라"), []byte("stray"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.repo.Write("c/라.md", "# 라\n")
	r.repo.Remove("b/다.md")
	r.repo.Commit("add 라, delete 다")
	for i, opt := range []syncer.Options{{}, {Full: true}, {Full: true}} {
		res, err := r.run(opt)
		t.Logf("run %d (full %v): %v (status %s)", i+1, opt.Full, err, res.Summary.Status)
		if errors.Is(err, syncer.ErrOutage) {
			t.Errorf("run %d: one object the folder refused for its own path is taken for the store down: %v", i+1, err)
		}
	}
	if _, ok := r.policies()["다"]; ok {
		t.Errorf("다 still published: every run stopped before its delete")
	}
	if _, ok := r.policies()["라"]; !ok {
		t.Errorf("라 never published: the full run's foreign delete that would free its path never ran")
	}
}

// redirect answers every PUT as AWS S3 does for a bucket in another
// region than the one the request was signed and sent for: 301
// PermanentRedirect (the SDK does not follow it).
type redirect struct{ next http.RoundTripper }

func (d redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPut {
		return d.next.RoundTrip(req)
	}
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	body := `<?xml version="1.0" encoding="UTF-8"?><Error><Code>PermanentRedirect</Code><Message>The bucket you are attempting to access must be addressed using the specified endpoint.</Message><Endpoint>policies-prod.s3.us-east-1.amazonaws.com</Endpoint><Bucket>policies-prod</Bucket></Error>`
	h := http.Header{"Content-Type": {"application/xml"}, "X-Amz-Bucket-Region": {"us-east-1"}}
	return &http.Response{StatusCode: http.StatusMovedPermanently, Header: h, Body: io.NopCloser(bytes.NewReader([]byte(body))), Request: req}, nil
}

// CONTENT_REGION auto on AWS S3 now takes the Lambda's AWS_REGION; a
// bucket in another region answers every upload 301 PermanentRedirect:
// a configuration error naming CONTENT_REGION, no retry counted. Review:
// translated as each object's own refusal (ErrRejected), it let every run
// through as item failures, and the third dead-lettered the policy, with
// nothing naming CONTENT_REGION.
func TestMirrorOutage_BucketInAnotherRegion_EveryUpload301_ConfigNotDeadLetter(t *testing.T) {
	t.Parallel()
	srv := mirrortest.NewS3Server(t)
	r := newRig(t).withMirror(s3Mirror(t, srv))
	r.seed()
	r.mustRun()
	client := *srv.Client
	client.Transport = redirect{next: srv.Client.Transport}
	r.withMirror(s3MirrorVia(t, srv, &client))
	r.repo.Write("a/가.md", "# 가\n\n새 판\n")
	r.repo.Commit("edit")
	for i := range 3 {
		res, err := r.run(syncer.Options{})
		t.Logf("run %d: %v (status %s)", i+1, err, res.Summary.Status)
		if !errors.Is(err, policy.ErrConfig) || !strings.Contains(err.Error(), "CONTENT_REGION") {
			t.Errorf("run %d, every upload 301 PermanentRedirect: %v; want a configuration error naming CONTENT_REGION", i+1, err)
		}
	}
	if d, ok := r.deadLetters()["가"]; ok {
		t.Errorf("가 dead-lettered by the bucket's region: %s", d.Reason)
	}
}

// R2 down for three runs (every upload that reaches it fails 503 after
// the in-call retries), and one policy of the same commits whose object
// the store refuses for its own sake (400: its metadata too large, say).
// It is an outage, no retry counted for 가 and 나 (the object's own
// refusal counts neither way, as a deadline cut does). Review: storeDown
// gave up on the first object-own failure, so the outage passed as item
// failures and the third run dead-lettered 가 and 나, held back once R2
// was back.
func TestMirrorOutage_StoreDownPlusOneRejectedObject_StillOutage(t *testing.T) {
	t.Parallel()
	r, m := syncedMirroredRig(t)
	r.repo.Write("a/가.md", "# 가\n\n새 판\n")
	r.repo.Write("a/나.md", "# 나\n\n새 판\n")
	r.repo.Write("c/라.md", "# 라\n")
	r.repo.Commit("edit 가 and 나, add 라")
	down := fmt.Errorf("%w: 503 ServiceUnavailable", mirror.ErrUnavailable)
	m.FailPut(mirror.Key(prefix, "가"), down)
	m.FailPut(mirror.Key(prefix, "나"), down)
	m.FailPut(mirror.Key(prefix, "라"), fmt.Errorf("%w: 400 MetadataTooLarge", mirror.ErrRejected))
	for i := range 3 {
		res, err := r.run(syncer.Options{})
		t.Logf("run %d: %v (status %s)", i+1, err, res.Summary.Status)
		if !errors.Is(err, syncer.ErrOutage) {
			t.Errorf("run %d, every upload the store could take failed 503: %v; want an outage", i+1, err)
		}
	}
	for _, name := range []string{"가", "나"} {
		if d, ok := r.deadLetters()[name]; ok {
			t.Errorf("%s dead-lettered by an R2 outage: %s", name, d.Reason)
		} else if q, ok := r.queueEntries()[name]; ok && q.RetryCount != 0 {
			t.Errorf("queue:%s retryCount %d: an outage counted as the policy's failure", name, q.RetryCount)
		}
	}
}

// Check (expected to pass): the registry delete of 다 lands, its object's
// delete fails; the next run is full (mirror not converged) and removes
// the object as foreign, now that no registry entry wants it.
func TestMirrorOutage_RegistryDeleteLandsObjectDeleteFails_NextRunRemovesIt(t *testing.T) {
	t.Parallel()
	r, m := syncedMirroredRig(t)
	r.repo.Remove("b/다.md")
	r.repo.Commit("delete 다")
	m.FailDelete(mirror.Key(prefix, "다"), fmt.Errorf("%w: 503", mirror.ErrUnavailable))
	res, err := r.run(syncer.Options{})
	t.Logf("run 1: %v, mirror %+v", err, res.Summary.Mirror)
	if _, ok := r.policies()["다"]; ok {
		t.Fatal("setup: 다's registry delete failed")
	}
	m.FailDelete(mirror.Key(prefix, "다"), nil)
	res, err = r.run(syncer.Options{})
	t.Logf("run 2: %v, mode %s, mirror %+v", err, res.Summary.Mode, res.Summary.Mirror)
	if _, _, ok := m.ReadRaw(t, mirror.Key(prefix, "다")); ok {
		t.Errorf("다's object left as an orphan")
	}
	res, err = r.run(syncer.Options{})
	t.Logf("run 3: %v, mode %s, mirror %+v", err, res.Summary.Mode, res.Summary.Mirror)
}

// editWithEveryUploadFailing syncs the seed into a registry with an S3
// mirror, edits 가 ("새 판") and makes the store answer every upload with
// status from now on; it returns 가's entry before the edit.
func editWithEveryUploadFailing(t *testing.T, status int) (*rig, *mirrortest.S3Server, policy.Entry) {
	t.Helper()
	srv := mirrortest.NewS3Server(t)
	r := newRig(t).withMirror(s3Mirror(t, srv))
	r.seed()
	r.mustRun()
	r.repo.Write("a/가.md", "# 가\n\n새 판\n")
	r.repo.Commit("edit")
	before := r.policies()["가"]
	srv.Faults.FailNext(mirrortest.OpPut, 1000, status)
	return r, srv, before
}
