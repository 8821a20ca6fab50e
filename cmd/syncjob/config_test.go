package main

import (
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/config"
)

func TestCLI_MissingRepo_Exit2NamesTheField(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	delete(w.env, "GITHUB_REPO")
	r := w.run("sync")
	if r.code != exitUsage || !strings.Contains(r.stderr, "GITHUB_REPO") {
		t.Errorf("exit %d, stderr %q; want 2 naming GITHUB_REPO", r.code, r.stderr)
	}
}

func TestCLI_BadSettings_Exit2NamesTheField(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	w := newWorld(t)
	r := w.run("sync", "--help")
	if r.code != exitOK {
		t.Fatalf("exit %d", r.code)
	}
	for _, s := range config.Settings() {
		if s.Group&syncHelp.groups == 0 {
			continue // another command's setting (STATUS_MAX_AGE): TestCLI_Help_ListsOnlyTheSettingsACommandReads
		}
		if !strings.Contains(r.stderr, "-"+s.Flag) || !strings.Contains(r.stderr, s.Env) {
			t.Errorf("help lacks --%s / %s", s.Flag, s.Env)
		}
		if s.Def != "" && !strings.Contains(r.stderr, "default "+s.Def) {
			t.Errorf("help lacks the default of %s (%s)", s.Env, s.Def)
		}
	}
	for _, f := range []string{"-full", "-dry-run", "-json"} {
		if !strings.Contains(r.stderr, f) {
			t.Errorf("help lacks %s", f)
		}
	}
}

// TestCLI_CredentialsInAPIURL_Exit2NamesTheSettingNotTheSecret: a
// user:password@ in an API URL would be sent as Basic auth instead of the
// token; it is a configuration error that names the setting and the form
// expected, and never shows the credentials.
func TestCLI_CredentialsInAPIURL_Exit2NamesTheSettingNotTheSecret(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ env, value, form, token string }{
		{"GITHUB_API_URL", "https://octo:hunter2secret@ghe.example/api/v3/", "https://ghe.example/api/v3/", "GITHUB_TOKEN"},
		{"GITHUB_API_URL", "https://ghp_tokenAsUser0123456789@api.github.com/", "https://api.github.com/", "GITHUB_TOKEN"},
		{"GITHUB_API_URL", "ftp://octo:hunter2secret@example/", "", ""},
		{"CLOUDFLARE_API_URL", "https://me:cfSecret0123456789@api.cloudflare.com/client/v4", "https://api.cloudflare.com/client/v4", "CLOUDFLARE_API_TOKEN"},
	} {
		t.Run(tc.env+"="+tc.value, func(t *testing.T) {
			w := newCloudflareWorld(t)
			w.env[tc.env] = tc.value
			for _, args := range [][]string{{"sync"}, {"sync", "--dry-run", "--json"}} {
				r := w.run(args...)
				if r.code != exitUsage || !strings.Contains(r.stderr, tc.env) || !strings.Contains(r.stderr, tc.form) || !strings.Contains(r.stderr, tc.token) {
					t.Errorf("%v: exit %d, stderr %q; want 2 naming %s, the form %s and %s", args, r.code, r.stderr, tc.env, tc.form, tc.token)
				}
				for _, secret := range []string{"hunter2secret", "ghp_tokenAsUser0123456789", "cfSecret0123456789", "octo", "me:"} {
					if strings.Contains(r.stdout+r.stderr, secret) {
						t.Errorf("%v: output shows %q:\n%s%s", args, secret, r.stdout, r.stderr)
					}
				}
			}
		})
	}
}

// TestCLI_TokenWithAControlCharacter_Exit2WithoutShowingIt: a token that
// holds a control character (a pasted line break inside it) could never
// be sent: it is refused naming the setting, not the value. (An
// adversarial helper found GITHUB_TOKEN's failing the run, exit 1, and
// CLOUDFLARE_API_TOKEN's retried for 25 s.)
func TestCLI_TokenWithAControlCharacter_Exit2WithoutShowingIt(t *testing.T) {
	t.Parallel()
	for _, env := range []string{"GITHUB_TOKEN", "CLOUDFLARE_API_TOKEN", "CONTENT_SECRET_ACCESS_KEY"} {
		t.Run(env, func(t *testing.T) {
			w := newCloudflareWorld(t)
			w.env["CONTENT_BUCKET"], w.env["CONTENT_ACCESS_KEY_ID"] = "policies-prod", "AKIAEXAMPLE"
			w.env["CONTENT_SECRET_ACCESS_KEY"] = strings.Repeat("s", 40)
			w.env[env] = "ghp_0123456789abcdef\x010123456789abcdef0123"
			r := w.run("sync")
			if r.code != exitUsage || !strings.Contains(r.stderr, env) || !strings.Contains(r.stderr, "control character") || strings.Contains(r.stderr, "0123456789abcdef") {
				t.Errorf("exit %d, stderr %q; want 2 naming %s, not its value", r.code, r.stderr, env)
			}
		})
	}
}

// TestCLI_ShortToken_Exit2WithoutShowingIt: a token of a few characters is
// a mistake that could not be masked wherever it appears; it is refused
// naming the setting, not the value.
func TestCLI_ShortToken_Exit2WithoutShowingIt(t *testing.T) {
	t.Parallel()
	for _, env := range []string{"GITHUB_TOKEN", "CLOUDFLARE_API_TOKEN"} {
		t.Run(env, func(t *testing.T) {
			w := newCloudflareWorld(t)
			w.env[env] = "Zq7"
			r := w.run("sync")
			if r.code != exitUsage || !strings.Contains(r.stderr, env) || !strings.Contains(r.stderr, "too short to be a token") || strings.Contains(r.stderr, "Zq7") {
				t.Errorf("exit %d, stderr %q; want 2 naming %s, not its value", r.code, r.stderr, env)
			}
		})
	}
}
