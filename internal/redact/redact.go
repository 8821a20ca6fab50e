// Package redact keeps secrets (API tokens, the webhook secret, credentials
// written into a URL) out of everything syncjob prints, logs or records. It
// is the one place that knows how: every adapter and the command line call
// it rather than replacing strings themselves.
package redact

import (
	"net/url"
	"slices"
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
// MinSecretLen for short ones.
func String(s string, secrets ...string) string {
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
	keep := 0
	if lower := strings.ToLower(s); strings.HasPrefix(lower, "https:") || strings.HasPrefix(lower, "http:") {
		keep = strings.Index(s, ":") + 1
		for keep < at && s[keep] == '/' {
			keep++
		}
	}
	return s[:keep] + "…" + s[at:]
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
