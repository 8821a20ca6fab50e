package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/webhook"

	"github.com/knue/syncjob/internal/lambda"
)

// TestRIE_WebhookToRegistry runs the real binary under AWS's Lambda Runtime
// Interface Emulator, twice: as the receiver, whose handoff goes through
// the AWS SDK to the fake Lambda Invoke API, which queues each asynchronous
// invocation and passes it on to the second emulator, running the binary
// as the sync function against the fake GitHub and Cloudflare. It needs
// the emulator:
//
//	go install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@latest
//	SYNCJOB_RIE=1 go test -run TestRIE -v ./cmd/syncjob
func TestRIE_WebhookToRegistry(t *testing.T) {
	if os.Getenv("SYNCJOB_RIE") == "" {
		t.Skip("set SYNCJOB_RIE=1 to run the binary under the Lambda Runtime Interface Emulator")
	}
	rie := findRIE(t)
	bootstrap := buildBootstrap(t)

	w := newCloudflareWorld(t)
	w.now = time.Now().UTC()
	seed(w)

	ext := &fakeExtension{sessionToken: testSessionTk, secrets: map[string]string{testWebhookARN: testWebhookSecret}}
	extURL, err := url.Parse(ext.serve(t))
	if err != nil {
		t.Fatal(err)
	}

	syncFn := startRIE(t, rie, bootstrap, map[string]string{
		"AWS_LAMBDA_FUNCTION_NAME":    testSyncFunction,
		"AWS_LAMBDA_FUNCTION_TIMEOUT": "300",
		"GITHUB_REPO":                 w.env["GITHUB_REPO"],
		"GITHUB_BRANCH":               "main",
		"GITHUB_API_URL":              w.env["GITHUB_API_URL"],
		"CLOUDFLARE_ACCOUNT_ID":       cfAccountID,
		"CLOUDFLARE_KV_NAMESPACE_ID":  cfNamespaceID,
		"CLOUDFLARE_API_TOKEN":        cfToken,
		"CLOUDFLARE_API_URL":          w.env["CLOUDFLARE_API_URL"],
		"LOG_FORMAT":                  "json",
	})

	// The fake Lambda queues each asynchronous invocation and runs them one
	// at a time, as reserved concurrency 1 does.
	lam := newFakeLambda(t)
	queue := make(chan recordedInvocation, 16)
	type ran struct {
		inv  recordedInvocation
		out  []byte
		took time.Duration
		at   time.Time
	}
	ranCh := make(chan ran, 16)
	lam.forward = func(inv recordedInvocation) { queue <- inv }
	go func() {
		for inv := range queue {
			began := time.Now()
			out := syncFn.invoke(t, inv.Payload)
			ranCh <- ran{inv: inv, out: out, took: time.Since(began), at: time.Now()}
		}
	}()
	t.Cleanup(func() { close(queue) })

	receiver := startRIE(t, rie, bootstrap, map[string]string{
		"AWS_LAMBDA_FUNCTION_NAME":               "syncjob-webhook",
		"AWS_LAMBDA_FUNCTION_TIMEOUT":            "10",
		lambda.EnvSyncFunction:                   testSyncFunction,
		"GITHUB_REPO":                            "knue/policies",
		"GITHUB_BRANCH":                          "main",
		lambda.EnvWebhookSecretARN:               testWebhookARN,
		"PARAMETERS_SECRETS_EXTENSION_HTTP_PORT": extURL.Port(),
		"AWS_REGION":                             testRegion,
		"AWS_ACCESS_KEY_ID":                      "AKIDFAKELAMBDA",
		"AWS_SECRET_ACCESS_KEY":                  "fake-lambda-secret-key",
		"AWS_SESSION_TOKEN":                      testSessionTk,
		"AWS_ENDPOINT_URL_LAMBDA":                lam.srv.URL,
	})

	// An empty payload is a manual run (aws-lambda-go would have failed it
	// as EOF before the handler).
	began := time.Now()
	var first policy.RunSummary
	if out := syncFn.invoke(t, nil); json.Unmarshal(out, &first) != nil || first.Trigger != "manual" || first.Status != policy.RunSuccess || first.Added != 3 {
		t.Fatalf("empty payload: %s", out)
	}
	t.Logf("empty payload: manual %s run, %d added, %v (cold start included)", first.Mode, first.Added, time.Since(began).Round(time.Millisecond))

	// A signed push to the branch.
	w.repo.Write("규정/제3편/연구윤리 규정.md", "# 연구윤리 규정\n\n"+bodyMarker+"\n")
	after := w.repo.Commit("연구윤리 규정 제정")
	push := delivery("push", testDelivery, pushPayload("knue/policies", "refs/heads/main", after), testWebhookSecret)
	delivered := time.Now()
	resp := receiver.deliver(t, push)
	answered := time.Since(delivered)
	if resp.StatusCode != 202 {
		t.Fatalf("receiver answered %d %q", resp.StatusCode, resp.Body)
	}
	var r ran
	select {
	case r = <-ranCh:
	case <-time.After(2 * time.Minute):
		t.Fatal("no run within 2 minutes of the delivery")
	}
	var sum policy.RunSummary
	if err := json.Unmarshal(r.out, &sum); err != nil || sum.Status != policy.RunSuccess || sum.Trigger != "webhook" || sum.Delivery != testDelivery || sum.CommitSHA != after || sum.Added != 1 {
		t.Fatalf("the handed-off run: %s (%v)", r.out, err)
	}
	got := lam.invocations()
	if len(got) != 1 || got[0].InvocationType != "Event" || got[0].Function != testSyncFunction || !got[0].Signed ||
		string(got[0].Payload) != `{"trigger":"webhook","after":"`+after+`","delivery":"`+testDelivery+`"}` {
		t.Fatalf("invocations: %+v", got)
	}
	st := w.state()
	if st.lastCommit != after || st.lastRun == nil || st.lastRun.Delivery != testDelivery || st.lastRun.Mode != "incremental" {
		t.Fatalf("registry: lastCommit %s, lastRun %+v", st.lastCommit, st.lastRun)
	}
	t.Logf("push %s: receiver answered 202 in %v; the run (%s, %d added, %d ms by its summary) ended %v after the delivery; registry lastCommit = after, lastRun.delivery = %s",
		after[:12], answered.Round(time.Millisecond), sum.Mode, sum.Added, sum.DurationMs, r.at.Sub(delivered).Round(time.Millisecond), st.lastRun.Delivery)

	// Every other delivery: answered, nothing started.
	body := pushPayload("knue/policies", "refs/heads/main", after)
	signed := delivery("push", "delivery-refused", body, testWebhookSecret)
	get := signed
	get.RequestContext.HTTP.Method = "GET"
	for _, tc := range []struct {
		name   string
		ev     events.LambdaFunctionURLRequest
		status int
	}{
		{"wrong secret", delivery("push", "delivery-refused", body, "guessed-secret"), 401},
		{"no signature", withHeader(withHeader(signed, "x-hub-signature-256", ""), "x-hub-signature", ""), 401},
		{"sha1 only", withHeader(signed, "x-hub-signature-256", ""), 401},
		{"signature of another body", withHeader(signed, "x-hub-signature-256", webhook.Sign([]byte(testWebhookSecret), []byte(body+" "))), 401},
		{"not POST", get, 405},
		{"oversized", delivery("push", "delivery-refused", body+strings.Repeat(" ", webhook.MaxBody), testWebhookSecret), 413},
		{"other branch", delivery("push", "delivery-refused", pushPayload("knue/policies", "refs/heads/draft", after), testWebhookSecret), 202},
		{"other repository", delivery("push", "delivery-refused", pushPayload("knue/website", "refs/heads/main", after), testWebhookSecret), 202},
		{"other event", delivery("issues", "delivery-refused", `{"action":"opened"}`, testWebhookSecret), 202},
		{"ping", delivery("ping", "delivery-refused", `{"zen":"Approachable is better than simple."}`, testWebhookSecret), 200},
	} {
		resp := receiver.deliver(t, tc.ev)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %d %q, want %d", tc.name, resp.StatusCode, resp.Body, tc.status)
		}
		t.Logf("%-26s → %d %s", tc.name, resp.StatusCode, strings.TrimSpace(resp.Body))
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(lam.invocations()); n != 1 {
		t.Errorf("%d invocations after the refused deliveries, want still 1", n)
	}
	select {
	case r := <-ranCh:
		t.Errorf("a refused delivery started a run: %s", r.inv.Payload)
	default:
	}

	ext.mu.Lock()
	asked := len(ext.asked)
	ext.mu.Unlock()
	if asked == 0 {
		t.Errorf("the receiver never read its secret through the secrets extension")
	}

	logs := receiver.output()
	for _, leak := range []string{testWebhookSecret, bodyMarker} {
		if strings.Contains(logs, leak) {
			t.Errorf("the receiver's output holds %q", leak)
		}
	}
	if n := strings.Count(logs, `"msg":"webhook delivery"`); n != 11 {
		t.Errorf("%d webhook delivery lines, want 11:\n%s", n, logs)
	}
	if !strings.Contains(syncFn.output(), `"delivery":"`+testDelivery+`"`) {
		t.Errorf("the sync function's lines do not name the delivery")
	}
}

// rieProcess is one emulator running the binary.
type rieProcess struct {
	addr string
	mu   sync.Mutex
	out  bytes.Buffer
}

func (p *rieProcess) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *rieProcess) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func findRIE(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("aws-lambda-rie"); err == nil {
		return p
	}
	gopath, err := exec.Command("go", "env", "GOPATH").Output()
	if err == nil {
		p := filepath.Join(strings.TrimSpace(string(gopath)), "bin", "aws-lambda-rie")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("aws-lambda-rie not found: go install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@latest")
	return ""
}

// buildBootstrap builds the Lambda binary for this machine, as make lambda
// does for arm64.
func buildBootstrap(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", out, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build bootstrap: %v\n%s", err, b)
	}
	return out
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startRIE starts the emulator on two free loopback ports (its own and the
// runtime API's) with only env and a PATH as the function's environment.
func startRIE(t *testing.T, rie, bootstrap string, env map[string]string) *rieProcess {
	t.Helper()
	p := &rieProcess{addr: freeAddr(t)}
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", p.addr, "--runtime-api-address", freeAddr(t), bootstrap)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "AWS_CONFIG_FILE=/nonexistent", "AWS_SHARED_CREDENTIALS_FILE=/nonexistent"}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = p, p
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("emulator %s output:\n%s", env["AWS_LAMBDA_FUNCTION_NAME"], p.output())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", p.addr)
		if err == nil {
			c.Close()
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("emulator not listening on %s: %v\n%s", p.addr, err, p.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// invoke posts payload to the emulator's invoke endpoint and returns what
// the function returned.
func (p *rieProcess) invoke(t *testing.T, payload []byte) []byte {
	resp, err := http.Post(fmt.Sprintf("http://%s/2015-03-31/functions/function/invocations", p.addr), "application/json", bytes.NewReader(payload))
	if err != nil {
		t.Errorf("invoke: %v", err)
		return nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("invoke: status %d: %s", resp.StatusCode, b)
	}
	return b
}

// deliver posts a Function URL event to the receiver.
func (p *rieProcess) deliver(t *testing.T, ev events.LambdaFunctionURLRequest) events.LambdaFunctionURLResponse {
	t.Helper()
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	var resp events.LambdaFunctionURLResponse
	if out := p.invoke(t, b); json.Unmarshal(out, &resp) != nil {
		t.Fatalf("receiver returned %s", out)
	}
	return resp
}
