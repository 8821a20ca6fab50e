// Package redact keeps secrets (API tokens, the webhook secret, credentials
// written into a URL) out of everything syncjob prints, logs or records. It
// is the one place that knows how: every adapter and the command line call
// it rather than replacing strings themselves.
package redact

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Mask replaces a secret wherever it appears.
const Mask = "[REDACTED]"

// MinSecretLen is the length from which a secret is masked wherever it
// appears. A shorter one (no real token is) is masked only where it stands
// alone, between characters that are not letters or digits: masked inside
// words, a secret of one letter would mask that letter in every line.
const MinSecretLen = 8

// String returns s with every non-empty secret replaced by Mask, the
// longest first (so a secret that contains another is masked whole); see
// MinSecretLen for short ones. A word shaped as a GitHub token is masked
// too, given or not (Tokens).
func String(s string, secrets ...string) string {
	s = Tokens(s)
	if len(secrets) > 1 {
		secrets = slices.Clone(secrets)
		slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	}
	for _, sec := range secrets {
		switch {
		case sec == "":
		case len(sec) >= MinSecretLen:
			s = strings.ReplaceAll(s, sec, Mask)
		default:
			s = replaceWhole(s, sec)
		}
	}
	return s
}

// Cut returns s with the secrets masked, then cut to at most n bytes at a
// character boundary. Masked first: a secret cut in two is no longer found
// (an adversarial helper found 53 characters of a token a server echoed
// shown so).
func Cut(s string, n int, secrets ...string) string {
	s = String(s, secrets...)
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// tokenPrefixes begin GitHub's token formats (personal, fine-grained,
// OAuth, user-to-server, server-to-server, refresh).
var tokenPrefixes = []string{"github_pat_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_"}

// minTokenTail is how many token characters after a prefix make a word a
// token: GitHub's have 36 or more (letters and digits; a fine-grained one
// underscores too). Fewer, the word is a name such as
// "ghs_labelling_rules" (a reviewer found such a policy masked in a plan).
const minTokenTail = 30

// Tokens returns s with every word shaped as a GitHub token masked: one
// that is no setting's secret (pasted into GITHUB_REPO, or another token a
// server echoes) or was cut where only its start is left.
func Tokens(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], 'g') // every prefix begins so
		if j < 0 {
			break
		}
		j += i
		i = j + 1
		if j > 0 && isTokenByte(s[j-1]) {
			continue
		}
		for _, p := range tokenPrefixes {
			if !strings.HasPrefix(s[j:], p) {
				continue
			}
			end := j + len(p)
			for end < len(s) && isTokenByte(s[end]) && (s[end] != '_' || p == "github_pat_") {
				end++
			}
			if end-j-len(p) >= minTokenTail {
				b.WriteString(s[last:j])
				b.WriteString(Mask)
				last, i = end, end
			}
			break
		}
	}
	if b.Len() == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func isTokenByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// Setting returns a setting's value as an error may quote it: what comes
// before its last '@' cut as URL cuts it (a clone URL with a token, pasted
// where owner/name belongs), and words shaped as tokens masked.
func Setting(v string) string {
	if at := strings.LastIndex(v, "@"); at >= 0 {
		v = v[:schemeEnd(v, at)] + "…" + v[at:]
	}
	return Tokens(v)
}

// MaxQuoted bounds how much of a refused value Quote shows.
const MaxQuoted = 100

// Quote is a refused value as an error shows it: cut as Setting cuts it,
// quoted, and no longer than MaxQuoted bytes (then followed by "…"): a 5 MB
// value is not echoed into a log line whole.
func Quote(v string) string {
	s := Setting(v)
	if len(s) <= MaxQuoted {
		return strconv.Quote(s)
	}
	return strconv.Quote(Cut(s, MaxQuoted)) + "…"
}

// replaceWhole masks the occurrences of sec in s that no letter or digit
// touches on either side.
func replaceWhole(s, sec string) string {
	var b strings.Builder
	rest := s
	for {
		i := strings.Index(rest, sec)
		if i < 0 {
			break
		}
		before, _ := utf8.DecodeLastRuneInString(rest[:i])
		if i == 0 && b.Len() > 0 {
			before, _ = utf8.DecodeLastRuneInString(b.String())
		}
		after, _ := utf8.DecodeRuneInString(rest[i+len(sec):])
		b.WriteString(rest[:i])
		if isWordRune(before) || isWordRune(after) {
			b.WriteString(sec)
		} else {
			b.WriteString(Mask)
		}
		rest = rest[i+len(sec):]
	}
	b.WriteString(rest)
	return b.String()
}

// isWordRune reports whether r is a letter or digit (utf8.RuneError, the
// start or end of the text, is not).
func isWordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// Error returns err with every secret masked in its text; errors.Is and
// errors.As still see the chain. It returns err itself when its text holds
// no secret, and nil for nil.
func Error(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := String(msg, secrets...); clean != msg {
		return &maskedError{msg: clean, err: err}
	}
	return err
}

// maskedError shows a masked message and keeps the chain.
type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

// URL returns u as text without its user info, query and fragment (a signed
// download token, credentials written into the URL). Credentials a
// mistyped URL holds where url.Parse finds no user info
// ("https:/KEY:SECRET@host", "KEY:SECRET@host") are cut too: all that
// comes before the last '@', but an http(s) scheme, shows as "…"
// (an adversarial helper found such a secret quoted in the error).
func URL(u *url.URL) string {
	c := *u
	c.RawQuery, c.User, c.Fragment, c.RawFragment = "", nil, "", ""
	s := c.String()
	at := strings.LastIndex(s, "@")
	if at < 0 {
		return s
	}
	return s[:schemeEnd(s, at)] + "…" + s[at:]
}

// schemeEnd is where an http(s) scheme and its slashes end in s, before
// at; 0 when s has none.
func schemeEnd(s string, at int) int {
	keep := 0
	if lower := strings.ToLower(s); strings.HasPrefix(lower, "https:") || strings.HasPrefix(lower, "http:") {
		keep = strings.Index(s, ":") + 1
		for keep < at && s[keep] == '/' {
			keep++
		}
	}
	return keep
}

// URLSecrets returns the credentials written into a URL
// ("https://user:secret@host/"): the password and the user name (a token is
// often written as the user), and the user info as it appears escaped in
// the text. None when raw has no user info or does not parse.
func URLSecrets(raw string) []string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.User == nil {
		return nil
	}
	var out []string
	if name := u.User.Username(); name != "" {
		out = append(out, name)
	}
	if pw, ok := u.User.Password(); ok && pw != "" {
		out = append(out, pw)
	}
	if pw, ok := u.User.Password(); ok && pw != "" {
		out = append(out, url.PathEscape(pw), url.QueryEscape(pw))
	}
	if s := u.User.String(); s != "" {
		out = append(out, s)
	}
	return out
}
