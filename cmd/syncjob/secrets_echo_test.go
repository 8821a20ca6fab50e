package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"
)

// echoedTokens are a fine-grained personal access token (93 characters),
// which redact.Tokens knows by its shape, and a token of no known shape,
// which only masking before the cut keeps whole.
var echoedTokens = []string{
	"github_pat_11ABCDEFG0123456789abcd_EFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
	"Zq7" + strings.Repeat("KpW3xR8mLtV2", 6),
}

// A GITHUB_API_URL whose server answers with the request's Authorization
// header (an echo service, a misrouted proxy): the head's answer was quoted
// cut at 60 characters before the token was masked, and 53 characters of it
// reached the CLI's first line, lastRun.error (status prints it) and the
// Lambda's error and logs (an adversarial helper).
func TestSync_ServerEchoesTheToken_NoPartOfItShown(t *testing.T) {
	t.Parallel()
	echo := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		_, _ = rw.Write([]byte(r.Header.Get("Authorization")))
	}))
	t.Cleanup(echo.Close)
	forEachBackend(t, func(t *testing.T, w *world) {
		for _, token := range echoedTokens {
			serverEchoesTheToken(t, w, echo.URL, token)
		}
	})
}

func serverEchoesTheToken(t *testing.T, w *world, echoURL, token string) {
	t.Helper()
	seed(w)
	w.env["GITHUB_API_URL"] = echoURL + "/"
	w.env["GITHUB_TOKEN"] = token
	part := token[:16]
	r := w.run("sync")
	if r.code == exitOK || strings.Contains(r.stdout+r.stderr, part) {
		t.Errorf("sync: exit %d; the output holds the token's start %q: %s", r.code, part, firstLine(r.stdout))
	}
	if s := w.state(); s.lastRun != nil && strings.Contains(s.lastRun.Error, part) {
		t.Errorf("lastRun.error holds the token's start: %s", s.lastRun.Error)
	}
	if r := w.run("status"); strings.Contains(r.stdout+r.stderr, part) {
		t.Errorf("status shows the token's start")
	}
	inv := w.invoke(`{"trigger":"schedule"}`, time.Minute)
	if inv.err == nil || strings.Contains(inv.err.Error(), part) || strings.Contains(inv.logs, part) {
		t.Errorf("Lambda: error %v; its error or logs hold the token's start", inv.err)
	}
}

// An archive link answered with an error whose body echoes the token across
// the 1 KiB the error keeps: the part before the cut was shown in a warning.
func TestSync_ArchiveErrorEchoesTheTokenAcrossTheCut_NoPartOfItShown(t *testing.T) {
	t.Parallel()
	token := echoedTokens[1] // of no known shape: only masking before the cut hides it
	w := newWorld(t)
	w.gh.Token = token
	for i := range 12 { // more than 10 files: one tarball
		w.repo.Write(fmt.Sprintf("규정/p%02d.md", i), fmt.Sprintf("# 규정 %d\n", i))
	}
	w.repo.Commit("twelve")
	target, err := url.Parse(w.gh.URL())
	if err != nil {
		t.Fatal(err)
	}
	var proxyURL string
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(resp *http.Response) error {
		if loc := resp.Header.Get("Location"); loc != "" {
			resp.Header.Set("Location", strings.Replace(loc, strings.TrimSuffix(w.gh.URL(), "/"), proxyURL, 1))
		}
		return nil
	}
	proxy := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/_codeload/") {
			rw.WriteHeader(http.StatusInternalServerError)
			_, _ = rw.Write([]byte(strings.Repeat("x", 990) + " " + r.Header.Get("Authorization")))
			return
		}
		rp.ServeHTTP(rw, r)
	}))
	t.Cleanup(proxy.Close)
	proxyURL = proxy.URL
	w.env["GITHUB_API_URL"] = proxy.URL + strings.TrimPrefix(w.gh.URL(), target.Scheme+"://"+target.Host)
	w.env["GITHUB_TOKEN"] = token
	r := w.run("sync")
	if all := r.stdout + r.stderr; strings.Contains(all, token[:16]) {
		t.Errorf("exit %d: the output holds the token's start", r.code)
	}
}

// GITHUB_REPO given as a clone URL with a token in it (a common paste):
// refused naming the setting, the credentials not shown, in the CLI and in
// Lambda.
func TestConfig_RepoCloneURLWithAToken_RefusedWithoutShowingIt(t *testing.T) {
	t.Parallel()
	const secret = "CLONEURLZq7KpW3xR8mLtV2KpW3x"
	w := newWorld(t)
	w.env["GITHUB_REPO"] = "https://x-access-token:" + secret + "@github.com/knue/policies.git"
	r := w.run("sync")
	if r.code != exitUsage || !strings.Contains(r.stderr, "GITHUB_REPO") || strings.Contains(r.stdout+r.stderr, "CLONEURL") {
		t.Errorf("exit %d, want 2 naming GITHUB_REPO without the token: %s", r.code, r.stderr)
	}
	inv := w.invoke(`{"trigger":"schedule"}`, time.Minute)
	if inv.err == nil || strings.Contains(inv.err.Error(), "CLONEURL") || strings.Contains(inv.logs, "CLONEURL") {
		t.Errorf("Lambda: %v; its error or logs show the token", inv.err)
	}
}

// A policy whose name merely begins like a GitHub token ("ghs_" for the
// Globally Harmonized System of chemical labels) is shown in the plan an
// operator reviews, not masked (a reviewer found it masked).
func TestSync_PolicyNamedLikeATokenPrefix_ShownInThePlan(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.sync(0)
	w.repo.Write("안전/ghs_labelling_rules.md", "# ghs_labelling_rules 화학물질 표지 지침\n")
	w.repo.Commit("add GHS rules")
	for _, args := range [][]string{{"sync", "--dry-run"}, {"sync", "--dry-run", "--json"}} {
		if r := w.run(args...); !strings.Contains(r.stdout, "ghs_labelling_rules") {
			t.Errorf("%v: exit %d, the plan does not name the policy:\n%s", args, r.code, r.stdout)
		}
	}
}

// The content mirror's settings are refused without showing a secret
// pasted into them: CONTENT_BUCKET was quoted whole, and CONTENT_ENDPOINT
// with no host (a secret key pasted there) too (a reviewer).
func TestConfig_ContentSettingHoldingASecret_RefusedWithoutShowingIt(t *testing.T) {
	t.Parallel()
	const secret = "Zq7KpW3xR8mLtV2KpW3xR8mLtV2KpW3xR8mLtV2K"
	for name, env := range map[string]map[string]string{
		"CONTENT_ENDPOINT": {"CONTENT_ENDPOINT": secret},
		"CONTENT_BUCKET":   {"CONTENT_BUCKET": "https://AKIAEXAMPLE:" + secret + "@host/b"},
	} {
		w := newWorld(t)
		w.env["CONTENT_BUCKET"], w.env["CONTENT_ACCESS_KEY_ID"], w.env["CONTENT_SECRET_ACCESS_KEY"] = "bucket", "AKIAEXAMPLE1234", "https://acct.r2.cloudflarestorage.com"
		for k, v := range env {
			w.env[k] = v
		}
		r := w.run("sync", "--dry-run")
		if r.code != exitUsage || !strings.Contains(r.stderr, name) || strings.Contains(r.stdout+r.stderr, secret[:12]) {
			t.Errorf("%s: exit %d, want 2 naming it without the secret: %s", name, r.code, r.stderr)
		}
	}
}
