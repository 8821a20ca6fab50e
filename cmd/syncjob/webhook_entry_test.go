package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	awslambda "github.com/aws/aws-lambda-go/lambda"

	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/wire"

	"github.com/knue/syncjob/internal/lambda"
)

func TestLambdaEntry_FunctionURLRequest_ServedByTheReceiver(t *testing.T) {
	t.Parallel()
	r := newReceiverRig(t)
	e := lambda.NewEntry(func(k string) string { return r.env[k] }, r.logs, time.Now, wire.LambdaJob(wire.Hooks{}))
	if e.Receiver == nil {
		t.Fatal("SYNC_FUNCTION_NAME is set: the entry should serve the receiver")
	}
	e.Receiver = r.h
	ev, err := json.Marshal(delivery("push", testDelivery, pushPayload("knue/policies", "refs/heads/main", testSHA), testWebhookSecret))
	if err != nil {
		t.Fatal(err)
	}
	out, err := invokeRaw(t, awslambda.NewHandler(e), string(ev))
	if err != nil {
		t.Fatal(err)
	}
	var resp events.LambdaFunctionURLResponse
	if err := json.Unmarshal(out, &resp); err != nil || resp.StatusCode != 202 {
		t.Fatalf("response %s (%v), want statusCode 202", out, err)
	}
	if n := len(r.lambda.invocations()); n != 1 {
		t.Errorf("%d invocations, want 1", n)
	}

	// The receiver runs no sync of its own.
	_, err = invokeRaw(t, awslambda.NewHandler(e), `{"trigger":"schedule"}`)
	var ee *lambda.EventError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "Function URL only") {
		t.Errorf("a sync event to the receiver: %v", err)
	}
}

func TestLambdaEntry_FunctionURLRequestToTheSyncFunction_Rejected(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	ev, err := json.Marshal(delivery("push", testDelivery, pushPayload("knue/policies", "refs/heads/main", testSHA), testWebhookSecret))
	if err != nil {
		t.Fatal(err)
	}
	logs := new(bytes.Buffer)
	_, err = invokeRaw(t, w.lambdaEntry(logs), string(ev))
	var ee *lambda.EventError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), lambda.EnvSyncFunction) {
		t.Errorf("err = %v, want an EventError pointing to the receiver", err)
	}
	if st := w.state(); len(st.keys) != 0 || w.gh.Requests().Total() != 0 {
		t.Errorf("a webhook request ran a sync: keys %v", st.keys)
	}
	assertNoSecretOrBody(t, logs.String())
}

func TestLambdaEntry_WebhookRunThatNeverSeesThePush_FailsForLambdaToRetry(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	head := seed(w)
	logs := new(bytes.Buffer)
	h := w.lambdaEntry(logs)
	if _, err := invokeRaw(t, h, `{"trigger":"schedule"}`); err != nil {
		t.Fatal(err)
	}
	// The head GitHub reports stays the one already synced, not the pushed
	// commit: the run reads it again, then fails, and the error makes
	// Lambda retry the asynchronous invocation.
	logs.Reset()
	_, err := invokeRaw(t, h, `{"trigger":"webhook","after":"`+testSHA+`","delivery":"`+testDelivery+`"}`)
	if err == nil || !strings.Contains(err.Error(), testSHA) || !strings.Contains(err.Error(), head) {
		t.Errorf("webhook run that never saw its push: err %v, want one naming the pushed %s and the head %s", err, testSHA, head)
	}
	if n := strings.Count(logs.String(), `"msg":"branch head not yet the pushed commit"`); n != 4 {
		t.Errorf("%d waits for the push logged, want 4:\n%s", n, logs)
	}
	if lr := w.state().lastRun; lr.Status != "failed" || lr.Delivery != testDelivery {
		t.Errorf("lastRun %s (delivery %q), want failed for delivery %s", lr.Status, lr.Delivery, testDelivery)
	}

	// GitHub catches up after two stale answers: the push is synced.
	w.repo.Write("규정/제3편/새 규정.md", "# 새 규정\n")
	pushed := w.repo.Commit("push")
	w.gh.FailNext(githubtest.KindCommitSHA, 2, githubtest.StaleHead(head))
	if _, err := invokeRaw(t, h, `{"trigger":"webhook","after":"`+pushed+`","delivery":"`+testDelivery+`"}`); err != nil {
		t.Fatal(err)
	}
	if lc := w.state().lastCommit; lc != pushed {
		t.Errorf("lastCommit %s after GitHub caught up, want the pushed %s", lc, pushed)
	}
}
