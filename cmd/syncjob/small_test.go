package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/report"
)

// unreadable is a stdin that fails the test when it is read.
type unreadable struct{ t *testing.T }

func (u unreadable) Read([]byte) (int, error) {
	u.t.Error("stdin was read")
	return 0, nil
}

func TestCLI_WebhookVerify_MalformedSignature_FailsBeforeReadingStdin(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.env["GITHUB_WEBHOOK_SECRET"] = testWebhookSecret
	w.stdin = unreadable{t}
	for _, sig := range []string{"sha256=xyz", "sha1=0123456789abcdef0123456789abcdef01234567", "deadbeef"} {
		r := w.run("webhook", "verify", "--signature", sig)
		if want := "syncjob: webhook verify: X-Hub-Signature-256 is not sha256= and 64 hex digits; see syncjob webhook verify --help\n"; r.code != exitUsage || r.stderr != want {
			t.Errorf("--signature %s: exit %d, stderr %q; want 2 and %q", sig, r.code, r.stderr, want)
		}
	}
}

func TestSync_RateLimitedWithoutToken_SuggestsGitHubToken(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.gh.FailNext(githubtest.AnyKind, -1, githubtest.PrimaryRateLimit(403, time.Now().Add(time.Hour)))
	r := w.sync(exitFailed)
	if got := firstLine(r.stdout); !strings.Contains(got, "rate limit") || !strings.Contains(got, "set GITHUB_TOKEN") {
		t.Errorf("first line %q: want the rate limit and a hint to set GITHUB_TOKEN", got)
	}
	w.env["GITHUB_TOKEN"] = "ghp_0123456789abcdefSECRET"
	r = w.sync(exitFailed)
	if got := firstLine(r.stdout); !strings.Contains(got, "rate limit") || strings.Contains(got, "GITHUB_TOKEN") {
		t.Errorf("with a token, first line %q: want the rate limit without the hint", got)
	}
}

func TestList_TypicalHangulRowsFit120Columns_PathNotRepeated(t *testing.T) {
	t.Parallel()
	const sha = "0123456789abcdef0123456789abcdef01234567"
	var entries []policy.Entry
	for name, title := range map[string]string{ // as in the real repository
		"한국교원대학교 대학원 학위청구논문 심사 규정": "한국교원대학교 대학원 학위청구논문 심사 규정",
		"교원양성 및 교육과정 운영위원회 규정":     "교원양성 및 교육과정 운영위원회 규정",
		"연구소 설치(운영)․규정":            "연구소 설치․운영 규정",
		"학칙":                       "한국교원대학교 학칙",
	} {
		entries = append(entries, policy.Entry{PolicyName: name, Title: title, Path: "규정/제3편 학사/" + name + ".md", SHA: sha, LastUpdated: "2026-11-25T16:00:00Z"})
	}
	var b strings.Builder
	report.Policies(&b, entries)
	for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if n := report.Width(line); n > 120 {
			t.Errorf("a row is %d cells wide, want at most 120:\n%s", n, line)
		}
		if strings.Count(line, "규정.md") > 0 || strings.Count(line, "학칙.md") > 0 {
			t.Errorf("the path repeats the name:\n%s", line)
		}
	}
}

func TestStatus_Help_SaysWhatStatusDoesNow(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := w.run("status", "--help")
	// since settings stopped relabelling the registry, they show beside it
	if strings.Contains(r.stderr, "only change that label") || !strings.Contains(r.stderr, `a "settings" line`) {
		t.Errorf("status --help describes the label GITHUB_REPO no longer changes:\n%s", r.stderr)
	}
}

func TestSync_FirstRunFails_LeavesNoRegistryFile(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.gh.FailNext(githubtest.AnyKind, -1, githubtest.ServerError(502))
	w.sync(exitFailed)
	if _, err := os.Stat(w.db); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a first run that wrote nothing left %s (stat: %v)", w.db, err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(w.db)); len(entries) != 0 {
		t.Errorf("a first run that wrote nothing left %v", entries)
	}
	w.gh.ClearFaults()
	w.sync(exitOK)
	w.gh.FailNext(githubtest.AnyKind, -1, githubtest.ServerError(502))
	w.sync(exitFailed)
	if s := w.state(); s.lastRun == nil || s.lastRun.Status != policy.RunFailed || len(s.policies) != 3 {
		t.Errorf("a failed run on an existing registry is recorded in it: %+v, %d policies", s.lastRun, len(s.policies))
	}
}

func TestSync_GitHubUnreachable_FailsAtOnce_ErrorOnce_NoRegistryFile(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.env["GITHUB_API_URL"] = "http://127.0.0.1:1/" // nothing listens: connection refused
	r := w.sync(exitFailed)
	if len(w.sleeps) != 0 {
		t.Errorf("waited %v to retry a GitHub that cannot be reached", w.sleeps)
	}
	if got := firstLine(r.stdout); !strings.HasPrefix(got, "failed: github: ") || !strings.Contains(got, "connection refused") {
		t.Errorf("first line %q, want failed: naming the refused connection", got)
	}
	if strings.Contains(r.stderr, "syncjob: ") || strings.Contains(r.stderr, "retrying request") {
		t.Errorf("stderr repeats the error or retries:\n%s", r.stderr)
	}
	if _, err := os.Stat(w.db); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the failed first run left %s (stat: %v)", w.db, err)
	}
}
