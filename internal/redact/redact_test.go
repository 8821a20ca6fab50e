package redact_test

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/redact"
)

func TestString_MasksEverySecretEverywhere(t *testing.T) {
	t.Parallel()
	got := redact.String("a tok b tok c key", "tok", "", "key")
	if want := "a [REDACTED] b [REDACTED] c [REDACTED]"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestError_MasksTextKeepsChain(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("get https://x/?t=tok: %w", fs.ErrNotExist)
	got := redact.Error(err, "tok")
	if strings.Contains(got.Error(), "tok") {
		t.Fatalf("secret in %q", got)
	}
	if !errors.Is(got, fs.ErrNotExist) {
		t.Fatal("chain lost")
	}
	if clean := errors.New("clean"); redact.Error(clean, "tok") != clean {
		t.Fatal("an error without secrets should be returned as it is")
	}
	if redact.Error(nil, "tok") != nil {
		t.Fatal("nil should stay nil")
	}
}

func TestURL_DropsUserInfoAndQuery(t *testing.T) {
	t.Parallel()
	u, _ := url.Parse("https://user:pa%40ss@host/path?sig=abc#frag")
	if got, want := redact.URL(u), "https://host/path"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestURLSecrets_UserAndPassword(t *testing.T) {
	t.Parallel()
	got := redact.URLSecrets("https://user:pa%40ss@host/")
	msg := redact.String("dial https://user:pa%40ss@host/ for user with pa@ss", got...)
	for _, leak := range []string{"pa@ss", "pa%40ss", "user"} {
		if strings.Contains(msg, leak) {
			t.Fatalf("%q leaks %q (secrets %q)", msg, leak, got)
		}
	}
	if redact.URLSecrets("https://host/") != nil || redact.URLSecrets("::") != nil {
		t.Fatal("a URL without user info has no secrets")
	}
}

// TestString_ShortSecret_OnlyWhereItStandsAlone: a secret of one letter
// used to mask that letter in every log line; under MinSecretLen one is
// masked only where no letter or digit touches it.
func TestString_ShortSecret_OnlyWhereItStandsAlone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ secret, in, want string }{
		{"e", "level=error msg=\"run finished\" e", "level=error msg=\"run finished\" [REDACTED]"},
		{"e", "token=e, next", "token=[REDACTED], next"},
		{"abc", "abcabc abc xabc abc1 (abc)", "abcabc [REDACTED] xabc abc1 ([REDACTED])"},
		{"학칙", "학칙 개정 규정학칙", "[REDACTED] 개정 규정학칙"},
		{"longsecret", "xlongsecretx", "x[REDACTED]x"}, // long enough: masked everywhere
	} {
		if got := redact.String(tc.in, tc.secret); got != tc.want {
			t.Errorf("String(%q, %q) = %q, want %q", tc.in, tc.secret, got, tc.want)
		}
	}
}

// TestPlan_CopiesItemsOnlyWhenASecretIsMasked: a plan with no secret in it
// is returned with its items as they are (a first sync's plan holds one
// item per policy: copying 200,000 was the run's last peak of memory); a
// plan with one gets a copy, and the caller's plan is not changed.
func TestPlan_CopiesItemsOnlyWhenASecretIsMasked(t *testing.T) {
	t.Parallel()
	clean := policy.Plan{Items: []policy.Item{{Action: policy.ActAdd, PolicyName: "a", Path: "a.md", Title: "제목"}, {Action: policy.ActDelete, PolicyName: "b"}}}
	if got := redact.Plan(clean, []string{"tok-123456"}); &got.Items[0] != &clean.Items[0] {
		t.Error("a plan without secrets was copied")
	}
	leaky := policy.Plan{Items: []policy.Item{{Action: policy.ActAdd, PolicyName: "a", Title: "x"}, {Action: policy.ActAdd, PolicyName: "b", Title: "see tok-123456"}}}
	got := redact.Plan(leaky, []string{"tok-123456"})
	if &got.Items[0] == &leaky.Items[0] {
		t.Fatal("a plan with a secret was masked in place")
	}
	if got.Items[1].Title == leaky.Items[1].Title || leaky.Items[1].Title != "see tok-123456" {
		t.Errorf("titles: got %q, caller's %q: want the copy masked, the caller's kept", got.Items[1].Title, leaky.Items[1].Title)
	}
	if !reflect.DeepEqual(got.Items[0], leaky.Items[0]) {
		t.Errorf("item 0 = %+v, want it as it was", got.Items[0])
	}
	moved := policy.Plan{Items: []policy.Item{{Action: policy.ActMove, PolicyName: "m", Path: "m.md", Old: policy.OldOf("tok-123456/m.md", "s1")}}}
	if got := redact.Plan(moved, []string{"tok-123456"}); strings.Contains(got.Items[0].OldPath(), "tok-123456") ||
		got.Items[0].OldSHA() != "s1" || moved.Items[0].OldPath() != "tok-123456/m.md" {
		t.Errorf("old path: got %q@%q, caller's %q: want the copy masked, the caller's kept", got.Items[0].OldPath(), got.Items[0].OldSHA(), moved.Items[0].OldPath())
	}
	if empty := redact.Plan(policy.Plan{Items: []policy.Item{}}, nil); empty.Items == nil {
		t.Error("an empty plan's items became nil")
	}
}

// TestURL_MistypedURLWithCredentials_SecretCut: a URL mistyped so that
// url.Parse finds no user info in it still shows nothing before its last
// '@' (an adversarial helper found CONTENT_ENDPOINT's error quoting the
// secret of "https:/KEY:SECRET@host").
func TestURL_MistypedURLWithCredentials_SecretCut(t *testing.T) {
	t.Parallel()
	const secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	for raw, want := range map[string]string{
		"https:/AKIAIOSFODNN7EXAMPLE:" + secret + "@acct.r2.cloudflarestorage.com":  "https:/…@acct.r2.cloudflarestorage.com",
		"AKIAIOSFODNN7EXAMPLE:" + secret + "@acct.r2.cloudflarestorage.com":         "…@acct.r2.cloudflarestorage.com",
		"https//AKIAIOSFODNN7EXAMPLE:" + secret + "@acct.r2.cloudflarestorage.com":  "…@acct.r2.cloudflarestorage.com",
		"https://AKIAIOSFODNN7EXAMPLE:" + secret + "@acct.r2.cloudflarestorage.com": "https://acct.r2.cloudflarestorage.com",
		"https://host/a@b": "https://…@b",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			continue // not a URL: its callers show none of it
		}
		got := redact.URL(u)
		if strings.Contains(got, secret) || strings.Contains(got, "AKIA") {
			t.Errorf("URL(%q) = %q: shows the credentials", raw, got)
		}
		if got != want {
			t.Errorf("URL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// A secret a server echoes is masked before the text is cut: cut first, the
// part left was no longer the secret and showed (an adversarial helper
// found 53 characters of a 93-character token in the first line).
func TestCut_MasksBeforeCutting(t *testing.T) {
	t.Parallel()
	const token = "x9Kq2LmN8pR4sT6vW1yZ3aB5cD7eF0gH2iJ4kL6mN8oP0qR2sT4uV6wX8yZ0aB2cD4eF6gH8iJ0kL2mN4oP6qR8sT0uV"
	for _, n := range []int{10, 20, 60, 200} {
		got := redact.Cut("Bearer "+token, n, token)
		if strings.Contains(got, token[:6]) || len(got) > n {
			t.Errorf("redact.Cut(…, %d) = %q: holds the token's start or is longer than %d", n, got, n)
		}
	}
	if got := redact.Cut("가나다", 4); got != "가" {
		t.Errorf("Cut splits a character: %q", got)
	}
}

// Words shaped as GitHub tokens are masked whether or not a setting holds
// them, whole or cut short; the prefixes alone, or inside a word, are not.
func TestTokens_GitHubShapedWordsMasked(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Bearer github_pat_11ABCDEFG0123456789abcd_EFGHIJKLMNOPQRSTUV":             "Bearer " + redact.Mask,
		"token ghp_abcdefghijklmnopqrstuvwxyz0123456789 was sent":                  "token " + redact.Mask + " was sent",
		`"https://x-access-token:ghs_CLONEURLSECRET1234567890abcdefghij@host"`:     `"https://x-access-token:` + redact.Mask + `@host"`,
		"ghu_" + strings.Repeat("a1", 18) + " and gho_" + strings.Repeat("B2", 18): redact.Mask + " and " + redact.Mask,
		"ghp_ alone, ghp_short, aghp_" + strings.Repeat("x", 36):                   "ghp_ alone, ghp_short, aghp_" + strings.Repeat("x", 36),
		"규정 ghs_" + strings.Repeat("9", 40):                                        "규정 " + redact.Mask,
		// names, not tokens: too short, or words joined by underscores (a reviewer)
		"ghs_labelling_rules.md, ghs_labelling_rules_for_students_in_the_dormitory": "ghs_labelling_rules.md, ghs_labelling_rules_for_students_in_the_dormitory",
		"": "",
	} {
		if got := redact.String(in); got != want {
			t.Errorf("redact.String(%q) = %q, want %q", in, got, want)
		}
	}
}

// A refused setting is quoted without the credentials of a URL pasted into
// it, without a token-shaped word, and at most n bytes long.
func TestQuote_RefusedSettingValue(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"knue policies": `"knue policies"`,
		"https://x-access-token:SECRETSECRET@github.com/knue/policies.git": `"https://…@github.com/knue/policies.git"`,
		"ghp_abcdefghijklmnopqrstuvwxyz0123456789":                         `"` + redact.Mask + `"`,
		strings.Repeat("x", 300):                                           `"` + strings.Repeat("x", 100) + `"…`,
	} {
		if got := redact.Quote(in); got != want {
			t.Errorf("redact.Quote(%.40q) = %q, want %q", in, got, want)
		}
	}
}
