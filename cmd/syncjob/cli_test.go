package main

import (
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/github/githubtest"
)

func TestCLI_MissingRepo_Exit2NamesTheField(t *testing.T) {
	w := newWorld(t)
	delete(w.env, "GITHUB_REPO")
	r := w.run("sync")
	if r.code != exitUsage || !strings.Contains(r.stderr, "GITHUB_REPO") {
		t.Errorf("exit %d, stderr %q; want 2 naming GITHUB_REPO", r.code, r.stderr)
	}
}

func TestCLI_BadSettings_Exit2NamesTheField(t *testing.T) {
	for _, tc := range []struct{ env, value string }{
		{"GITHUB_REPO", "not a repo"},
		{"GITHUB_API_URL", "ftp://example"},
		{"BATCH_SIZE", "10001"},
		{"BATCH_SIZE", "many"},
		{"CONCURRENCY", "0"},
		{"MAX_FILE_SIZE", "-1"},
		{"RECONCILE_INTERVAL", "soon"},
		{"LOG_FORMAT", "xml"},
		{"CLOUDFLARE_ACCOUNT_ID", "abc"},
	} {
		t.Run(tc.env+"="+tc.value, func(t *testing.T) {
			w := newWorld(t)
			w.env[tc.env] = tc.value
			r := w.run("sync")
			if r.code != exitUsage {
				t.Fatalf("exit %d, want 2; stderr %s", r.code, r.stderr)
			}
			want := tc.env
			if tc.env == "CLOUDFLARE_ACCOUNT_ID" {
				want = "CLOUDFLARE_KV_NAMESPACE_ID" // the missing one is named
			}
			if !strings.Contains(r.stderr, want) {
				t.Errorf("stderr %q does not name %s", r.stderr, want)
			}
		})
	}
}

func TestCLI_Help_ListsEverySettingWithDefault(t *testing.T) {
	w := newWorld(t)
	r := w.run("sync", "--help")
	if r.code != exitOK {
		t.Fatalf("exit %d", r.code)
	}
	for _, s := range settings() {
		if !strings.Contains(r.stderr, "-"+s.flag) || !strings.Contains(r.stderr, s.env) {
			t.Errorf("help lacks --%s / %s", s.flag, s.env)
		}
		if s.def != "" && !strings.Contains(r.stderr, "default "+s.def) {
			t.Errorf("help lacks the default of %s (%s)", s.env, s.def)
		}
	}
	for _, f := range []string{"-full", "-dry-run", "-json"} {
		if !strings.Contains(r.stderr, f) {
			t.Errorf("help lacks %s", f)
		}
	}
}

func TestCLI_UnknownCommand_Exit2(t *testing.T) {
	w := newWorld(t)
	if r := w.run("frobnicate"); r.code != exitUsage {
		t.Errorf("exit %d, want 2", r.code)
	}
	if r := w.run(); r.code != exitUsage {
		t.Errorf("no command: exit %d, want 2", r.code)
	}
}

func TestCLI_List_ShowsPolicies(t *testing.T) {
	forEachBackend(t, func(t *testing.T, w *world) {
		seed(w)
		w.sync(0)
		delete(w.env, "GITHUB_REPO") // list needs no repository
		r := w.run("list")
		if r.code != 0 || !strings.Contains(r.stdout, "한국교원대학교 학칙") || !strings.Contains(r.stdout, "3 policies") {
			t.Errorf("list: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		r = w.run("list", "--json")
		if r.code != 0 || !strings.Contains(r.stdout, `"policyName": "학칙"`) {
			t.Errorf("list --json: exit %d\n%s", r.code, r.stdout)
		}
	})
}

func TestCLI_TokenNeverPrinted(t *testing.T) {
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
