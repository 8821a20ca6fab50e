package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

func TestLambdaEntry_FunctionURLRequest_ServedByTheReceiver(t *testing.T) {
	r := newReceiverRig(t)
	e := newLambdaEntry(func(k string) string { return r.env[k] }, r.logs, deps{})
	if e.receiver == nil {
		t.Fatal("SYNC_FUNCTION_NAME is set: the entry should serve the receiver")
	}
	e.receiver = r.h
	ev, err := json.Marshal(delivery("push", testDelivery, pushPayload("knue/policies", "refs/heads/main", testSHA), testWebhookSecret))
	if err != nil {
		t.Fatal(err)
	}
	out, err := invokeRaw(t, lambda.NewHandler(e), string(ev))
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
	_, err = invokeRaw(t, lambda.NewHandler(e), `{"trigger":"schedule"}`)
	var ee *EventError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "Function URL only") {
		t.Errorf("a sync event to the receiver: %v", err)
	}
}

func TestLambdaEntry_FunctionURLRequestToTheSyncFunction_Rejected(t *testing.T) {
	w := newWorld(t)
	seed(w)
	ev, err := json.Marshal(delivery("push", testDelivery, pushPayload("knue/policies", "refs/heads/main", testSHA), testWebhookSecret))
	if err != nil {
		t.Fatal(err)
	}
	logs := new(bytes.Buffer)
	_, err = invokeRaw(t, w.lambdaEntry(logs), string(ev))
	var ee *EventError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), envSyncFunction) {
		t.Errorf("err = %v, want an EventError pointing to the receiver", err)
	}
	if st := w.state(); len(st.keys) != 0 || w.gh.Requests().Total() != 0 {
		t.Errorf("a webhook request ran a sync: keys %v", st.keys)
	}
	assertNoSecretOrBody(t, logs.String())
}

func TestLambdaEntry_WebhookRunThatMissedThePush_Warns(t *testing.T) {
	w := newWorld(t)
	head := seed(w)
	logs := new(bytes.Buffer)
	h := w.lambdaEntry(logs)
	if _, err := invokeRaw(t, h, `{"trigger":"schedule"}`); err != nil {
		t.Fatal(err)
	}
	// The head GitHub reports is the one already synced, not the pushed
	// commit.
	logs.Reset()
	if _, err := invokeRaw(t, h, `{"trigger":"webhook","after":"`+testSHA+`","delivery":"`+testDelivery+`"}`); err != nil {
		t.Fatal(err)
	}
	line := invocation{logs: logs.String()}.line(t, "pushed commit not at the branch head")
	if line["after"] != testSHA || line["commit"] != head || line["delivery"] != testDelivery || line["level"] != "WARN" {
		t.Errorf("line = %v", line)
	}

	// The pushed commit synced: no warning.
	logs.Reset()
	if _, err := invokeRaw(t, h, `{"trigger":"webhook","after":"`+head+`","delivery":"`+testDelivery+`"}`); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "pushed commit not at the branch head") {
		t.Errorf("warned although the head is the pushed commit:\n%s", logs)
	}
}
