package lambda_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/knue/syncjob/internal/lambda"
	"github.com/knue/syncjob/internal/webhook"
)

type recordedHandoff struct{ payloads []string }

func (h *recordedHandoff) InvokeAsync(_ context.Context, _ string, p []byte) error {
	h.payloads = append(h.payloads, string(p))
	return nil
}

// deliver hands the receiver, configured by env, one push delivery signed
// with secret; it returns the status, the handoffs and the logs.
func deliver(t *testing.T, env map[string]string, secret string) (int, []string, string) {
	t.Helper()
	var logs bytes.Buffer
	h := &recordedHandoff{}
	r := lambda.NewReceiver(func(k string) string { return env[k] }, &logs, time.Now, h, nil)
	body := fmt.Sprintf(`{"ref":"refs/heads/main","before":"%s","after":"%s","repository":{"full_name":"knue/policies"}}`, strings.Repeat("b", 40), strings.Repeat("a", 40))
	resp := r.Handle(context.Background(), events.LambdaFunctionURLRequest{
		RequestContext: events.LambdaFunctionURLRequestContext{HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: "POST"}},
		Headers: map[string]string{"x-github-event": "push", "x-github-delivery": "d-1",
			"x-hub-signature-256": webhook.Sign([]byte(secret), []byte(body)), "content-type": "application/json"},
		Body: body,
	})
	return resp.StatusCode, h.payloads, logs.String()
}

// A webhook secret shorter than redact.MinSecretLen is refused as a
// setting, as every secret is: a delivery signed with "push" was handed on
// (and the word "push" masked wherever it stood alone in the log).
func TestReceiver_ShortSecret_RefusedAsASetting(t *testing.T) {
	t.Parallel()
	env := map[string]string{lambda.EnvSyncFunction: "syncjob-sync", "GITHUB_REPO": "knue/policies", lambda.EnvWebhookSecret: "push"}
	status, handed, logs := deliver(t, env, "push")
	if status != 500 || len(handed) != 0 || !strings.Contains(logs, "GITHUB_WEBHOOK_SECRET: the secret is 4 characters long: too short") {
		t.Errorf("status %d, handed on %v, want 500 naming the setting; logs:\n%s", status, handed, logs)
	}
	env[lambda.EnvWebhookSecret] = "push-secret-long-enough"
	if status, handed, _ := deliver(t, env, "push-secret-long-enough"); status != 202 || len(handed) != 1 {
		t.Errorf("a secret long enough: status %d, handed on %v", status, handed)
	}
}

// GITHUB_REPO given as a clone URL with a token: the receiver refuses it on
// every delivery (anyone may send one), its log not showing the token.
func TestReceiver_RepoCloneURLWithAToken_NotShown(t *testing.T) {
	t.Parallel()
	const token = "CLONEURLZq7KpW3xR8mLtV2KpW3x"
	env := map[string]string{lambda.EnvSyncFunction: "syncjob-sync", "GITHUB_REPO": "https://x-access-token:" + token + "@github.com/knue/policies.git", lambda.EnvWebhookSecret: "whsec-long-enough-1234"}
	status, _, logs := deliver(t, env, "whsec-long-enough-1234")
	if status != 500 || !strings.Contains(logs, "GITHUB_REPO") || strings.Contains(logs, "CLONEURL") {
		t.Errorf("status %d, want 500 naming GITHUB_REPO without the token; logs:\n%s", status, logs)
	}
}
