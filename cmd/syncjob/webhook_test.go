package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/knue/syncjob/internal/webhook"

	"github.com/knue/syncjob/internal/lambda"
)

const (
	testWebhookSecret = "whsec_TEST-7c1e4d2b9a0f-SECRET"
	testWebhookARN    = "arn:aws:secretsmanager:ap-northeast-2:123456789012:secret:syncjob/github-webhook-AbCdEf"
	// bodyMarker is in every test delivery's body (a commit message, as
	// a pusher would write it): no log line may quote it.
	bodyMarker = "BODY-MARKER 학칙 개정 7f3a9"
	githubIP   = "140.82.115.10"
)

// pushPayload is a push event as GitHub sends it, cut to the fields that
// matter and a commit message.
func pushPayload(repo, ref, after string) string {
	deleted := after == strings.Repeat("0", 40)
	b, _ := json.Marshal(map[string]any{
		"ref": ref, "before": "2222222222222222222222222222222222222222", "after": after,
		"created": false, "deleted": deleted, "forced": false,
		"repository":  map[string]any{"id": 1, "name": strings.SplitN(repo, "/", 2)[1], "full_name": repo},
		"pusher":      map[string]any{"name": "editor"},
		"commits":     []any{map[string]any{"id": after, "message": bodyMarker}},
		"head_commit": map[string]any{"id": after, "message": bodyMarker},
	})
	return string(b)
}

// delivery is a webhook delivery as a Lambda Function URL hands it to the
// function (payload format 2.0, header names lower-cased), signed with
// secret as GitHub signs it: sha256 and the legacy sha1 beside it.
func delivery(event, id, body, secret string) events.LambdaFunctionURLRequest {
	m := hmac.New(sha1.New, []byte(secret))
	m.Write([]byte(body))
	return events.LambdaFunctionURLRequest{
		Version: "2.0", RawPath: "/",
		Headers: map[string]string{
			"accept":              "*/*",
			"content-type":        "application/json",
			"user-agent":          "GitHub-Hookshot/4f9b1e2",
			"x-github-event":      event,
			"x-github-delivery":   id,
			"x-github-hook-id":    "512345678",
			"x-hub-signature":     "sha1=" + hex.EncodeToString(m.Sum(nil)),
			"x-hub-signature-256": webhook.Sign([]byte(secret), []byte(body)),
		},
		RequestContext: events.LambdaFunctionURLRequestContext{
			RequestID: "url-request", DomainName: "abcdefgh.lambda-url.ap-northeast-2.on.aws",
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{
				Method: "POST", Path: "/", Protocol: "HTTP/1.1", SourceIP: githubIP, UserAgent: "GitHub-Hookshot/4f9b1e2",
			},
		},
		Body: body,
	}
}

func withHeader(ev events.LambdaFunctionURLRequest, name, value string) events.LambdaFunctionURLRequest {
	h := map[string]string{}
	for k, v := range ev.Headers {
		h[k] = v
	}
	if value == "" {
		delete(h, name)
	} else {
		h[name] = value
	}
	ev.Headers = h
	return ev
}

// receiverRig is the receiver with its environment and a fake Lambda.
type receiverRig struct {
	t      *testing.T
	env    map[string]string
	lambda *fakeLambda
	logs   *bytes.Buffer
	h      *lambda.Receiver
}

func newReceiverRig(t *testing.T) *receiverRig {
	t.Helper()
	r := &receiverRig{t: t, lambda: newFakeLambda(t), logs: new(bytes.Buffer)}
	r.env = map[string]string{
		lambda.EnvSyncFunction:  testSyncFunction,
		"GITHUB_REPO":           "knue/policies",
		"GITHUB_BRANCH":         "main",
		lambda.EnvWebhookSecret: testWebhookSecret,
	}
	at := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	r.h = lambda.NewReceiver(func(k string) string { return r.env[k] }, r.logs, func() time.Time { return at }, r.lambda.invoker(), nil)
	return r
}

// answer is the receiver's response to one request and what it logged.
type answer struct {
	resp events.LambdaFunctionURLResponse
	logs invocation
}

func (r *receiverRig) deliver(ev events.LambdaFunctionURLRequest) answer {
	r.t.Helper()
	r.logs.Reset()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: "rcv-0001"})
	resp := r.h.Handle(ctx, ev)
	return answer{resp: resp, logs: invocation{logs: r.logs.String()}}
}

// line is the answer's one "webhook delivery" line.
func (a answer) line(t *testing.T) map[string]any {
	t.Helper()
	return a.logs.line(t, "webhook delivery")
}

// metric returns the value of a metric of the answer's one EMF line.
func (a answer) metric(t *testing.T, name string) any {
	t.Helper()
	m := a.logs.metrics(t)
	if len(m) != 1 {
		t.Fatalf("%d EMF lines, want 1:\n%s", len(m), a.logs.logs)
	}
	return m[0][name]
}

func TestWebhook_SignedPushToTheBranch_HandedOffAsynchronously(t *testing.T) {
	t.Parallel()
	r := newReceiverRig(t)
	const after = "89abcdef0123456789abcdef0123456789abcdef"
	a := r.deliver(delivery("push", testDelivery, pushPayload("knue/policies", "refs/heads/main", after), testWebhookSecret))
	if a.resp.StatusCode != 202 || !strings.Contains(a.resp.Body, after) {
		t.Fatalf("answer %d %q, want 202", a.resp.StatusCode, a.resp.Body)
	}
	got := r.lambda.invocations()
	if len(got) != 1 {
		t.Fatalf("%d invocations, want 1", len(got))
	}
	inv := got[0]
	if inv.Function != testSyncFunction || inv.InvocationType != "Event" || !inv.Signed {
		t.Errorf("invocation of %q, type %q, signed %v; want an Event invocation of %s, SigV4-signed", inv.Function, inv.InvocationType, inv.Signed, testSyncFunction)
	}
	if want := `{"trigger":"webhook","after":"` + after + `","delivery":"` + testDelivery + `"}`; string(inv.Payload) != want {
		t.Errorf("payload %s, want %s", inv.Payload, want)
	}
	line := a.line(t)
	for k, want := range map[string]any{
		"outcome": "sync", "statusCode": 202.0, "delivery": testDelivery, "githubEvent": "push", "sourceIp": githubIP,
		"repo": "knue/policies", "ref": "refs/heads/main", "after": after, "syncFunction": testSyncFunction,
		"level": "INFO", "awsRequestId": "rcv-0001",
	} {
		if line[k] != want {
			t.Errorf("webhook delivery %s = %v, want %v", k, line[k], want)
		}
	}
	if a.metric(t, "WebhookHandedOff") != 1.0 || a.metric(t, "WebhookRejected") != 0.0 || a.metric(t, "Repo") != "knue/policies" {
		t.Errorf("EMF line: %s", a.logs.logs)
	}
}

func TestWebhook_EveryOtherDelivery_AnsweredAndNothingStarted(t *testing.T) {
	t.Parallel()
	push := pushPayload("knue/policies", "refs/heads/main", testSHA)
	signedPush := delivery("push", testDelivery, push, testWebhookSecret)
	b64 := signedPush
	b64.Body, b64.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(push)), true
	get := signedPush
	get.RequestContext.HTTP.Method = "GET"
	big := delivery("push", testDelivery, push+strings.Repeat(" ", webhook.MaxBody), testWebhookSecret)

	for _, tc := range []struct {
		name     string
		ev       events.LambdaFunctionURLRequest
		status   int
		outcome  string
		invoked  bool
		rejected bool
	}{
		{"valid signature", signedPush, 202, "sync", true, false},
		{"valid signature, base64 body", b64, 202, "sync", true, false},
		{"signature missing", withHeader(withHeader(signedPush, "x-hub-signature-256", ""), "x-hub-signature", ""), 401, "rejected", false, true},
		{"signature wrong", delivery("push", testDelivery, push, "not-the-secret"), 401, "rejected", false, true},
		{"signature of another body", withHeader(signedPush, "x-hub-signature-256", webhook.Sign([]byte(testWebhookSecret), []byte(pushPayload("knue/policies", "refs/heads/main", strings.Repeat("e", 40))))), 401, "rejected", false, true},
		{"sha1 only", withHeader(signedPush, "x-hub-signature-256", ""), 401, "rejected", false, true},
		{"ping", delivery("ping", testDelivery, `{"zen":"Design for failure.","hook_id":512345678,"hook":{"type":"Repository","events":["push"]}}`, testWebhookSecret), 200, "ping", false, false},
		{"other event", delivery("pull_request", testDelivery, `{"action":"opened","number":7,"title":"`+bodyMarker+`"}`, testWebhookSecret), 202, "ignored", false, false},
		{"other repository", delivery("push", testDelivery, pushPayload("knue/website", "refs/heads/main", testSHA), testWebhookSecret), 202, "ignored", false, false},
		{"other branch", delivery("push", testDelivery, pushPayload("knue/policies", "refs/heads/draft", testSHA), testWebhookSecret), 202, "ignored", false, false},
		{"branch deleted", delivery("push", testDelivery, pushPayload("knue/policies", "refs/heads/main", strings.Repeat("0", 40)), testWebhookSecret), 202, "ignored", false, false},
		{"oversized body", big, 413, "refused", false, false},
		{"not POST", get, 405, "refused", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReceiverRig(t)
			a := r.deliver(tc.ev)
			if a.resp.StatusCode != tc.status {
				t.Errorf("status %d (%q), want %d", a.resp.StatusCode, a.resp.Body, tc.status)
			}
			if n := len(r.lambda.invocations()); (n == 1) != tc.invoked || n > 1 {
				t.Errorf("%d invocations, want invoked %v", n, tc.invoked)
			}
			line := a.line(t)
			if line["outcome"] != tc.outcome || line["statusCode"] != float64(tc.status) {
				t.Errorf("line outcome %v status %v, want %s %d", line["outcome"], line["statusCode"], tc.outcome, tc.status)
			}
			// Every line names the delivery and where it came from, even
			// when the signature is wrong (then the id is only a claim).
			if line["delivery"] != testDelivery || line["sourceIp"] != githubIP {
				t.Errorf("line without the delivery id and source IP: %v", line)
			}
			if want := map[bool]float64{true: 1, false: 0}[tc.rejected]; a.metric(t, "WebhookRejected") != want {
				t.Errorf("WebhookRejected = %v, want %v", a.metric(t, "WebhookRejected"), want)
			}
			if tc.status == 405 && a.resp.Headers["Allow"] != "POST" {
				t.Errorf("405 without Allow: POST: %v", a.resp.Headers)
			}
			if tc.rejected && line["level"] != "WARN" {
				t.Errorf("a rejected delivery logs at %v, want WARN", line["level"])
			}
			assertNoSecretOrBody(t, a.logs.logs+a.resp.Body)
		})
	}
}

func assertNoSecretOrBody(t *testing.T, out string) {
	t.Helper()
	for _, leak := range []string{testWebhookSecret, bodyMarker, "BODY-MARKER", `"commits"`, `\"commits\"`} {
		if strings.Contains(out, leak) {
			t.Errorf("output holds %q:\n%s", leak, out)
		}
	}
}

func TestWebhook_PushesDuringARun_EachQueued(t *testing.T) {
	t.Parallel()
	// The handoff waits for nothing but Lambda's 202: while the one run
	// the sync function's reserved concurrency allows is going, each push
	// is still answered at once and its event queued, none dropped.
	r := newReceiverRig(t)
	shas := []string{strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 40)}
	for i, sha := range shas {
		a := r.deliver(delivery("push", "delivery-"+string(rune('1'+i)), pushPayload("knue/policies", "refs/heads/main", sha), testWebhookSecret))
		if a.resp.StatusCode != 202 {
			t.Fatalf("push %d: %d %q", i, a.resp.StatusCode, a.resp.Body)
		}
	}
	got := r.lambda.invocations()
	if len(got) != len(shas) {
		t.Fatalf("%d invocations, want %d", len(got), len(shas))
	}
	for i, inv := range got {
		var ev lambda.WebhookEvent
		if err := json.Unmarshal(inv.Payload, &ev); err != nil || ev.After != shas[i] || ev.Delivery != "delivery-"+string(rune('1'+i)) {
			t.Errorf("invocation %d: %s (%v)", i, inv.Payload, err)
		}
	}
}

func TestWebhook_HandoffRefused_502AndLogged(t *testing.T) {
	t.Parallel()
	r := newReceiverRig(t)
	r.lambda.fail(404, "ResourceNotFoundException")
	a := r.deliver(delivery("push", testDelivery, pushPayload("knue/policies", "refs/heads/main", testSHA), testWebhookSecret))
	if a.resp.StatusCode != 502 || !strings.Contains(a.resp.Body, "redeliver") {
		t.Errorf("answer %d %q, want 502 saying it can be redelivered", a.resp.StatusCode, a.resp.Body)
	}
	line := a.line(t)
	if line["level"] != "ERROR" || line["outcome"] != "failed" || line["delivery"] != testDelivery || line["after"] != testSHA ||
		!strings.Contains(line["error"].(string), "ResourceNotFoundException") {
		t.Errorf("line = %v", line)
	}
	if a.metric(t, "WebhookFailed") != 1.0 || a.metric(t, "WebhookHandedOff") != 0.0 {
		t.Errorf("EMF: %s", a.logs.logs)
	}
	assertNoSecretOrBody(t, a.logs.logs+a.resp.Body)
}

func TestWebhook_SecretFromSecretsManager(t *testing.T) {
	t.Parallel()
	r := newReceiverRig(t)
	ext := &fakeExtension{sessionToken: testSessionTk, secrets: map[string]string{testWebhookARN: testWebhookSecret}}
	r.h.ExtensionURL = ext.serve(t)
	delete(r.env, lambda.EnvWebhookSecret)
	r.env[lambda.EnvWebhookSecretARN] = testWebhookARN
	r.env["AWS_SESSION_TOKEN"] = testSessionTk

	push := delivery("push", testDelivery, pushPayload("knue/policies", "refs/heads/main", testSHA), testWebhookSecret)
	if a := r.deliver(push); a.resp.StatusCode != 202 {
		t.Fatalf("answer %d %q", a.resp.StatusCode, a.resp.Body)
	}
	if a := r.deliver(delivery("push", testDelivery, pushPayload("knue/policies", "refs/heads/main", testSHA), "old-secret")); a.resp.StatusCode != 401 {
		t.Errorf("wrong secret: %d", a.resp.StatusCode)
	}
	// A GET is refused before the secret is read.
	ext.asked = nil
	get := push
	get.RequestContext.HTTP.Method = "GET"
	if a := r.deliver(get); a.resp.StatusCode != 405 || len(ext.asked) != 0 {
		t.Errorf("GET: %d, secret read %d times", a.resp.StatusCode, len(ext.asked))
	}

	t.Run("unreadable", func(t *testing.T) {
		ext.status = 400
		a := r.deliver(push)
		line := a.line(t)
		if a.resp.StatusCode != 500 || line["level"] != "ERROR" || !strings.Contains(line["error"].(string), lambda.EnvWebhookSecretARN) {
			t.Errorf("answer %d, line %v", a.resp.StatusCode, line)
		}
		if a.metric(t, "WebhookFailed") != 1.0 || len(r.lambda.invocations()) != 1 {
			t.Errorf("EMF %s; %d invocations", a.logs.logs, len(r.lambda.invocations()))
		}
		ext.status = 0
	})
	t.Run("both settings", func(t *testing.T) {
		r.env[lambda.EnvWebhookSecret] = testWebhookSecret
		a := r.deliver(push)
		if a.resp.StatusCode != 500 || !strings.Contains(a.line(t)["error"].(string), "not both") {
			t.Errorf("answer %d: %s", a.resp.StatusCode, a.logs.logs)
		}
		assertNoSecretOrBody(t, a.logs.logs)
		delete(r.env, lambda.EnvWebhookSecret)
	})
}

func TestWebhook_Misconfigured_500NamesTheSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ unset, want string }{
		{lambda.EnvSyncFunction, lambda.EnvSyncFunction},
		{"GITHUB_REPO", "GITHUB_REPO"},
		{lambda.EnvWebhookSecret, lambda.EnvWebhookSecret},
	} {
		r := newReceiverRig(t)
		delete(r.env, tc.unset)
		a := r.deliver(delivery("push", testDelivery, pushPayload("knue/policies", "refs/heads/main", testSHA), testWebhookSecret))
		line := a.line(t)
		if a.resp.StatusCode != 500 || !strings.Contains(line["error"].(string), tc.want) || line["delivery"] != testDelivery {
			t.Errorf("without %s: %d, line %v", tc.unset, a.resp.StatusCode, line)
		}
		if len(r.lambda.invocations()) != 0 {
			t.Errorf("without %s: invoked", tc.unset)
		}
	}
}

func TestWebhook_StandardSDKConfiguration_AWS_ENDPOINT_URL_LAMBDA(t *testing.T) {
	// In Lambda the SDK reads the function's credentials and region from
	// the environment; AWS_ENDPOINT_URL_LAMBDA points it elsewhere.
	f := newFakeLambda(t)
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", dir+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", dir+"/credentials")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_REGION", testRegion)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDFAKELAMBDA")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "fake-lambda-secret-key")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_ENDPOINT_URL_LAMBDA", f.srv.URL)
	inv, err := lambda.NewInvoker(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := inv.InvokeAsync(context.Background(), testSyncFunction, []byte(`{"trigger":"webhook"}`)); err != nil {
		t.Fatal(err)
	}
	if got := f.invocations(); len(got) != 1 || !got[0].Signed || got[0].InvocationType != "Event" || string(got[0].Payload) != `{"trigger":"webhook"}` {
		t.Errorf("invocations = %+v", got)
	}
}
