package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/github/githubtest"
)

func TestCLI_UnknownCommand_Exit2(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if r := w.run("frobnicate"); r.code != exitUsage {
		t.Errorf("exit %d, want 2", r.code)
	}
	if r := w.run(); r.code != exitUsage {
		t.Errorf("no command: exit %d, want 2", r.code)
	}
}

func TestCLI_TokenNeverPrinted(t *testing.T) {
	t.Parallel()
	const token = "ghp_SECRETSECRETSECRET0123456789abcdef"
	for _, tc := range []struct {
		name  string
		fault *githubtest.Fault
		code  int
	}{
		{"success", nil, 0},
		{"rate limited", &[]githubtest.Fault{githubtest.PrimaryRateLimit(403, time.Now().Add(time.Hour))}[0], 1},
		{"server error", &[]githubtest.Fault{githubtest.ServerError(502)}[0], 1},
		{"echoes the token", &[]githubtest.Fault{githubtest.StatusError(404, "Not Found: token "+token)}[0], 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, w *world) {
				seed(w)
				w.gh.Token = token
				w.env["GITHUB_TOKEN"] = token
				w.env["LOG_LEVEL"] = "debug"
				// a registry that exists keeps the record of a failed run (a
				// first run that fails before writing leaves no file)
				w.sync(0)
				w.repo.Write("규정/신규.md", "# 신규\n")
				w.repo.Commit("one more")
				if tc.fault != nil {
					w.gh.FailNext(githubtest.AnyKind, -1, *tc.fault)
				}
				r := w.sync(tc.code)
				j := w.sync(tc.code, "--json", "--dry-run")
				st := w.state()
				for where, text := range map[string]string{"stdout": r.stdout + j.stdout, "stderr": r.stderr + j.stderr, "lastRun": st.lastRun.Error} {
					if strings.Contains(text, token) || strings.Contains(text, token[4:20]) {
						t.Errorf("the token appears in %s:\n%s", where, text)
					}
				}
			})
		})
	}
}

// TestCLI_CredentialsInAPIURL_NeverPrinted: credentials written into the
// API URL are a configuration error (see
// TestCLI_CredentialsInAPIURL_Exit2NamesTheSettingNotTheSecret), refused
// before any request, and still never printed nor recorded. (They used to
// be accepted and masked in the retries' log lines; the github package's
// redaction of its BaseURL's credentials stays tested there.)
func TestCLI_CredentialsInAPIURL_NeverPrinted(t *testing.T) {
	t.Parallel()
	const password = "s3cr3tpassword0123"
	w := newWorld(t)
	seed(w)
	w.sync(exitOK)
	w.env["GITHUB_API_URL"] = strings.Replace(w.gh.URL(), "http://", "http://someone:"+password+"@", 1)
	w.env["LOG_LEVEL"] = "debug"
	w.gh.ResetRequests()
	r := w.sync(exitUsage)
	j := w.sync(exitUsage, "--json", "--dry-run")
	lastRun, err := json.Marshal(w.state().lastRun)
	if err != nil {
		t.Fatal(err)
	}
	for where, text := range map[string]string{"stdout": r.stdout + j.stdout, "stderr": r.stderr + j.stderr, "lastRun": string(lastRun)} {
		if strings.Contains(text, password) {
			t.Errorf("the URL's password appears in %s:\n%s", where, text)
		}
	}
	if n := w.gh.Requests().Total(); n != 0 {
		t.Errorf("%d requests sent with credentials in the URL, want none", n)
	}
}
