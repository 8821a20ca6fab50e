package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/redact"

	"github.com/knue/syncjob/internal/lambda"
)

// fakeExtension is the AWS Parameters and Secrets Lambda Extension's HTTP
// interface, serving Secrets Manager secrets by id.
type fakeExtension struct {
	sessionToken string
	secrets      map[string]string
	status       int // when set, every answer has this status
	mu           sync.Mutex
	asked        []string
}

func (f *fakeExtension) serve(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("secretId")
		f.mu.Lock()
		f.asked = append(f.asked, id)
		f.mu.Unlock()
		switch {
		case r.URL.Path != "/secretsmanager/get":
			http.Error(rw, "not found", http.StatusNotFound)
		case r.Header.Get("X-Aws-Parameters-Secrets-Token") != f.sessionToken:
			http.Error(rw, "forbidden: missing or wrong X-Aws-Parameters-Secrets-Token", http.StatusForbidden)
		case f.status != 0:
			http.Error(rw, `{"__type":"AccessDeniedException","message":"not authorized to perform secretsmanager:GetSecretValue"}`, f.status)
		case f.secrets[id] == "":
			http.Error(rw, `{"__type":"ResourceNotFoundException"}`, http.StatusBadRequest)
		default:
			_ = json.NewEncoder(rw).Encode(map[string]any{"ARN": id, "Name": "syncjob", "SecretString": f.secrets[id], "VersionStages": []string{"AWSCURRENT"}})
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

const (
	testToken     = "ghp_LAMBDASECRET0123456789abcdefABCDEF"
	testTokenARN  = "arn:aws:secretsmanager:ap-northeast-2:123456789012:secret:syncjob/github-token-AbCdEf"
	testSessionTk = "IQoJb3JpZ2luX2VjEXAMPLESESSIONTOKEN"
)

// withSecretExtension makes the world's token come from a fake extension.
func withSecretExtension(w *world) (*fakeExtension, *testHandler) {
	ext := &fakeExtension{sessionToken: testSessionTk, secrets: map[string]string{testTokenARN: testToken + "\n"}}
	w.gh.Token = testToken
	w.env["GITHUB_TOKEN_SECRET_ARN"] = testTokenARN
	w.env["AWS_SESSION_TOKEN"] = testSessionTk
	h := w.lambdaHandler(new(bytes.Buffer))
	h.ExtensionURL = ext.serve(w.t)
	return ext, h
}

func TestLambda_TokenFromSecretsManager_UsedAndNeverPrinted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		fault  *githubtest.Fault
		status string
	}{
		{"success", nil, policy.RunSuccess},
		{"server error", &[]githubtest.Fault{githubtest.ServerError(502)}[0], policy.RunFailed},
		{"rate limited", &[]githubtest.Fault{githubtest.PrimaryRateLimit(403, time.Now().Add(time.Hour))}[0], policy.RunFailed},
		{"echoes the token", &[]githubtest.Fault{githubtest.StatusError(404, "Not Found: token "+testToken)}[0], policy.RunFailed},
		{"echoes the token in a blob", nil, policy.RunPartial},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			seed(w)
			w.env["LOG_LEVEL"] = "debug"
			ext, h := withSecretExtension(w)
			if tc.fault != nil {
				w.gh.FailNext(githubtest.AnyKind, -1, *tc.fault)
			}
			if tc.name == "echoes the token in a blob" {
				failSeededBlobs(w, w.repo.Head("main"), githubtest.StatusError(500, "internal error for "+testToken))
			}
			inv := w.invokeWith(h, `{"trigger":"schedule"}`, time.Minute)
			wantErr := tc.status == policy.RunFailed
			if (inv.err != nil) != wantErr {
				t.Fatalf("err = %v, want error %v\n%s", inv.err, wantErr, inv.logs)
			}
			if st := w.state().lastRun; st == nil || st.Status != tc.status {
				t.Errorf("lastRun = %+v, want status %s", st, tc.status)
			}
			if tc.status == policy.RunSuccess && inv.sum.Added != 3 {
				t.Errorf("the token did not reach GitHub: %+v", inv.sum)
			}
			if len(ext.asked) != 1 || ext.asked[0] != testTokenARN {
				t.Errorf("extension asked for %v", ext.asked)
			}
			sum, _ := json.Marshal(inv.sum)
			errText := ""
			if inv.err != nil {
				errText = inv.err.Error()
			}
			st := w.state()
			lastRun, _ := json.Marshal(st.lastRun)
			for where, text := range map[string]string{"logs and EMF": inv.logs, "summary": string(sum), "error": errText, "lastRun": string(lastRun)} {
				for _, secret := range []string{testToken, testToken[4:20], testSessionTk} {
					if strings.Contains(text, secret) {
						t.Errorf("a secret (%.8s...) appears in the %s:\n%s", secret, where, text)
					}
				}
			}
		})
	}
}

func TestLambda_DryRunPlan_NeverPrintsTheToken(t *testing.T) {
	t.Parallel()
	// A title is read from a file: one quoting the token must not carry it
	// into the result or the log.
	w := newWorld(t)
	seed(w)
	w.repo.Write("규정/토큰.md", "# leaked "+testToken+"\n")
	w.repo.Commit("a title quoting the token")
	_, h := withSecretExtension(w)
	inv := w.invokeWith(h, `{"mode":"full","dryRun":true}`, time.Minute)
	if inv.err != nil || inv.plan == nil {
		t.Fatalf("handler: %v, plan %v", inv.err, inv.plan)
	}
	var title string
	for _, it := range inv.plan.Items {
		if it.PolicyName == "토큰" {
			title = it.Title
		}
	}
	if title != "leaked "+redact.Mask {
		t.Errorf("title %q, want the token redacted", title)
	}
	res, _ := json.Marshal(lambda.Result{RunSummary: inv.sum, Plan: inv.plan})
	for where, text := range map[string]string{"result": string(res), "logs": inv.logs} {
		if strings.Contains(text, testToken) {
			t.Errorf("the token appears in the %s:\n%s", where, text)
		}
	}
	if !strings.Contains(inv.logs, "leaked "+redact.Mask) {
		t.Errorf("the dry-run plan line does not show the redacted title:\n%s", inv.logs)
	}
}

func TestLambda_SecretReferenceProblems_NameTheSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(w *world, ext *fakeExtension, h *testHandler)
		words []string
	}{
		{"token and reference both set", func(w *world, _ *fakeExtension, _ *testHandler) { w.env["GITHUB_TOKEN"] = testToken },
			[]string{"GITHUB_TOKEN or GITHUB_TOKEN_SECRET_ARN, not both"}},
		{"access denied", func(_ *world, ext *fakeExtension, _ *testHandler) { ext.status = http.StatusBadRequest },
			[]string{"status 400", "AccessDeniedException"}},
		{"unknown secret", func(w *world, _ *fakeExtension, _ *testHandler) {
			w.env["GITHUB_TOKEN_SECRET_ARN"] = "syncjob/other"
		},
			[]string{"syncjob/other", "ResourceNotFoundException"}},
		{"no session token", func(w *world, _ *fakeExtension, _ *testHandler) { delete(w.env, "AWS_SESSION_TOKEN") },
			[]string{"status 403"}},
		{"extension missing", func(_ *world, _ *fakeExtension, h *testHandler) { h.ExtensionURL = "http://127.0.0.1:1" },
			[]string{"layer attached"}},
		{"empty secret", func(_ *world, ext *fakeExtension, _ *testHandler) { ext.secrets[testTokenARN] = "  " },
			[]string{"no SecretString"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			seed(w)
			ext, h := withSecretExtension(w)
			tc.setup(w, ext, h)
			inv := w.invokeWith(h, `{"trigger":"schedule"}`, time.Minute)
			var ce *policy.ConfigError
			if !errors.As(inv.err, &ce) || ce.Setting != "GITHUB_TOKEN_SECRET_ARN" {
				t.Fatalf("err = %v, want a ConfigError naming GITHUB_TOKEN_SECRET_ARN", inv.err)
			}
			for _, word := range tc.words {
				if !strings.Contains(inv.err.Error(), word) {
					t.Errorf("error %q does not say %q", inv.err, word)
				}
			}
			if strings.Contains(inv.logs+inv.err.Error(), testToken) || strings.Contains(inv.logs+inv.err.Error(), testSessionTk) {
				t.Errorf("a secret was printed:\n%s\n%v", inv.logs, inv.err)
			}
			if n := w.gh.Requests().Total(); n != 0 {
				t.Errorf("%d GitHub requests without a token", n)
			}
		})
	}
}
