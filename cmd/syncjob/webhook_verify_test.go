package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/webhook"

	"github.com/knue/syncjob/internal/lambda"
)

// verify runs "syncjob webhook verify args..." with body on stdin.
func (w *world) verify(body string, args ...string) result {
	w.t.Helper()
	w.stdin = strings.NewReader(body)
	defer func() { w.stdin = nil }()
	return w.run(append([]string{"webhook", "verify"}, args...)...)
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCLI_WebhookVerify(t *testing.T) {
	t.Parallel()
	body := pushPayload("knue/policies", "refs/heads/main", testSHA)
	sig := webhook.Sign([]byte(testWebhookSecret), []byte(body))
	// As GitHub's Recent Deliveries shows a delivery's request headers.
	captured := "Request URL: https://abcdefgh.lambda-url.ap-northeast-2.on.aws/\nRequest method: POST\n" +
		"Accept: */*\ncontent-type: application/json\nUser-Agent: GitHub-Hookshot/4f9b1e2\n" +
		"X-GitHub-Delivery: " + testDelivery + "\nX-GitHub-Event: push\nX-GitHub-Hook-ID: 512345678\n" +
		"X-Hub-Signature: sha1=0123456789abcdef0123456789abcdef01234567\nX-Hub-Signature-256: " + sig + "\n"
	headers := writeFile(t, "headers.txt", captured)
	jsonHeaders := writeFile(t, "event.json", `{"version":"2.0","headers":{"x-hub-signature-256":"`+sig+`","x-github-event":"push","x-github-delivery":"`+testDelivery+`"},"body":"ignored"}`)
	sha1Only := writeFile(t, "sha1.txt", "X-GitHub-Event: push\nX-Hub-Signature: sha1=0123456789abcdef0123456789abcdef01234567\n")

	for _, tc := range []struct {
		name   string
		env    map[string]string
		body   string
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{"valid, --signature", nil, body, []string{"--signature", sig}, 0, []string{"valid\n"}, ""},
		{"valid, captured headers", nil, body, []string{"--headers", headers}, 0, []string{"valid\n"}, ""},
		{"valid, what the receiver would do", map[string]string{"GITHUB_REPO": "knue/policies"}, body, []string{"--headers", headers}, 0,
			[]string{"valid\n", "the receiver would answer 202: sync of " + testSHA}, ""},
		{"valid, another branch", map[string]string{"GITHUB_REPO": "knue/policies", "GITHUB_BRANCH": "live"}, body, []string{"--headers", headers}, 0,
			[]string{"valid\n", "would answer 202: push to refs/heads/main, not refs/heads/live"}, ""},
		{"valid, JSON headers", nil, body, []string{"--headers", jsonHeaders}, 0, []string{"valid\n"}, ""},
		{"valid, secret in another variable", map[string]string{"MY_SECRET": testWebhookSecret, lambda.EnvWebhookSecret: ""}, body, []string{"--secret-env", "MY_SECRET", "--signature", sig}, 0, []string{"valid\n"}, ""},
		{"wrong secret", map[string]string{lambda.EnvWebhookSecret: "another-secret"}, body, []string{"--signature", sig}, 1, []string{"invalid: X-Hub-Signature-256 does not match the body", "GITHUB_WEBHOOK_SECRET"}, ""},
		{"another body", nil, body + "\n", []string{"--signature", sig}, 1, []string{"invalid: ", "not the exact bytes"}, ""},
		{"malformed: a usage error, before stdin is read", nil, body, []string{"--signature", "abc"}, 2, nil, "X-Hub-Signature-256 is not sha256="},
		{"sha1 only", nil, body, []string{"--headers", sha1Only}, 1, []string{"invalid: only X-Hub-Signature (sha1)"}, ""},
		{"oversized", nil, strings.Repeat("x", webhook.MaxBody+1), []string{"--signature", sig}, 1, []string{"invalid: the body is over", "413"}, ""},
		{"no secret", map[string]string{lambda.EnvWebhookSecret: ""}, body, []string{"--signature", sig}, 2, nil, "GITHUB_WEBHOOK_SECRET"},
		{"a secret too short", map[string]string{lambda.EnvWebhookSecret: "push"}, body, []string{"--signature", sig}, 2, nil, "GITHUB_WEBHOOK_SECRET: the secret is 4 characters long: too short"},
		{"no signature", nil, body, nil, 2, nil, "--signature SIG or --headers FILE"},
		{"both", nil, body, []string{"--signature", sig, "--headers", headers}, 2, nil, "not both"},
		{"missing headers file", nil, body, []string{"--headers", filepath.Join(t.TempDir(), "none")}, 2, nil, "read headers"},
		{"an argument", nil, body, []string{"--signature", sig, "body.json"}, 2, nil, `unexpected argument "body.json"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.env[lambda.EnvWebhookSecret] = testWebhookSecret
			for k, v := range tc.env {
				w.env[k] = v
			}
			r := w.verify(tc.body, tc.args...)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d\nstdout %s\nstderr %s", r.code, tc.code, r.stdout, r.stderr)
			}
			for _, want := range tc.stdout {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("stdout %q lacks %q", r.stdout, want)
				}
			}
			if !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("stderr %q lacks %q", r.stderr, tc.stderr)
			}
			if out := r.stdout + r.stderr; strings.Contains(out, testWebhookSecret) || strings.Contains(out, bodyMarker) {
				t.Errorf("output quotes the secret or the body:\n%s", out)
			}
		})
	}
}

func TestCLI_WebhookHelp_Exit0(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for _, args := range [][]string{{"webhook", "--help"}, {"webhook", "verify", "--help"}, {"webhook", "verify", "-h"}} {
		if r := w.run(args...); r.code != 0 || !strings.Contains(r.stderr, "Usage: syncjob webhook verify") || !strings.Contains(r.stderr, "--secret-env") {
			t.Errorf("%v: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	if r := w.run("webhook"); r.code != 2 || !strings.Contains(r.stderr, "verify") {
		t.Errorf("webhook without a subcommand: exit %d %q", r.code, r.stderr)
	}
	if r := w.run("webhook", "sign"); r.code != 2 {
		t.Errorf("webhook sign: exit %d", r.code)
	}
	if r := w.run("--help"); !strings.Contains(r.stderr, "syncjob webhook verify") {
		t.Errorf("syncjob --help does not list webhook verify:\n%s", r.stderr)
	}
}
