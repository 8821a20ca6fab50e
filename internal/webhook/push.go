package webhook

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Push is what a push event says that the receiver acts on.
type Push struct {
	Repo    string // repository.full_name, owner/name
	Ref     string // refs/heads/<branch> (or refs/tags/...)
	Before  string
	After   string // the commit the ref now points at; 40 zeros when deleted
	Deleted bool
	Forced  bool // a force push: the ref's old commit is not in its new history
}

// zeroSHA is what GitHub sends as after when a push deletes the ref.
const zeroSHA = "0000000000000000000000000000000000000000"

// shaPattern is compiled when first used, not when the program starts
// (docs/bench.md, "Round trips").
var shaPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{40}$`) })

// IsCommitSHA reports whether s is a full commit sha as GitHub writes it:
// 40 lower-case hex digits.
func IsCommitSHA(s string) bool { return shaPattern().MatchString(s) }

// BranchRef is the ref a push to branch names.
func BranchRef(branch string) string { return "refs/heads/" + branch }

// parsePush reads the fields of a push payload the receiver needs; the rest
// of the payload (commits, pusher, ...) is not looked at.
func parsePush(body []byte) (Push, error) {
	var p struct {
		Ref        string `json:"ref"`
		Before     string `json:"before"`
		After      string `json:"after"`
		Deleted    bool   `json:"deleted"`
		Forced     bool   `json:"forced"`
		Repository struct {
			FullName string `json:"full_name"`
		} `json:"repository"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		// The error text of encoding/json quotes no more than a type or
		// an offset, never the body.
		return Push{}, fmt.Errorf("push payload is not the expected JSON: %w", err)
	}
	if p.Ref == "" || p.Repository.FullName == "" {
		return Push{}, fmt.Errorf("push payload has no ref or repository.full_name")
	}
	return Push{
		Repo: p.Repository.FullName, Ref: p.Ref, Before: p.Before, After: p.After,
		Deleted: p.Deleted || p.After == zeroSHA, Forced: p.Forced,
	}, nil
}

// MaxDeliveryLen bounds the X-GitHub-Delivery id of a push the receiver
// hands on (GitHub's are 36-byte GUIDs): the sync function logs and
// records it.
const MaxDeliveryLen = 100

// Unverified makes a header value that nobody has vouched for (sent before
// the signature was checked, or not covered by it, as X-GitHub-Delivery
// never is) fit to log and record: invalid UTF-8 replaced, control and
// invisible characters (C0, C1, bidi controls, zero-width characters, line
// and paragraph separators) dropped, spaces trimmed, and cut at a character
// boundary after MaxDeliveryLen bytes.
func Unverified(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	s = strings.TrimSpace(s)
	if len(s) <= MaxDeliveryLen {
		return s
	}
	cut := MaxDeliveryLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
