package policy

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// IsPolicyPath reports whether a repository path names a policy: its base name
// ends in ".md" (any ASCII case), it is not README.md (any ASCII case), and no
// segment (folder or file) starts with '.'. Whether the entry is a regular
// file (not a symlink or submodule) is the source's business, not the path's.
//
// Case is folded in ASCII only: Unicode folding would make names such as
// "ſ" (U+017F) compare equal to "s", which git on Linux does not do.
func IsPolicyPath(path string) bool {
	if path == "" {
		return false
	}
	for seg := range strings.SplitSeq(path, "/") {
		if strings.HasPrefix(seg, ".") {
			return false
		}
	}
	base := baseName(path)
	if !hasSuffixFold(base, ".md") {
		return false
	}
	return !equalFoldASCII(base, "README.md")
}

// NameOf returns the policyName of a path: its base name without the ".md"
// suffix (any ASCII case), in Unicode NFC, so that a name committed in NFD
// gives the same key as its NFC form.
//
// Each byte of invalid UTF-8 becomes U+FFFD, as encoding/json does when the
// name is written into an entry; keeping the bytes would make the key and the
// entry's policyName disagree. Two paths that differ only in invalid bytes
// therefore share a name and are reported as a conflict.
func NameOf(path string) string {
	base := baseName(path)
	if hasSuffixFold(base, ".md") {
		base = base[:len(base)-len(".md")]
	}
	return norm.NFC.String(validUTF8(base))
}

// KeyFits reports whether every key written for the name (policy:, queue:,
// dead-letter:) stays within the registry's key limit.
func KeyFits(name string) bool { return len(name) <= MaxNameBytes }

// Title returns the text of the first non-empty ATX level-1 heading of a
// markdown document, trimmed and in NFC, or fallback when there is none.
//
// It follows CommonMark for what it looks at: up to three spaces of
// indentation, "#" followed by a space, a tab or the end of the line, an
// optional closing sequence of '#'s. It ignores a leading BOM, YAML front
// matter (a first line "---" closed by a "---" or "..." line), fenced code
// blocks (``` and ~~~) and HTML comments; a line such as "> # x" or "- # x"
// is a block quote or a list, not a heading. Inline markup is kept as written.
// Lines end at LF or CRLF; a lone CR is a space. Invalid UTF-8 becomes
// U+FFFD. The fallback is returned as given.
func Title(content []byte, fallback string) string {
	b := bytes.TrimPrefix(content, []byte("\uFEFF"))
	var fence fence
	inComment := false
	// Lines are made strings one at a time: the file is not copied whole
	// (a 1 MiB file whose title is on its first line costs one line).
	for rest := skipFrontMatter(b); len(rest) > 0; {
		var raw []byte
		raw, rest = nextLine(rest)
		line := string(raw)
		switch {
		case fence.open():
			if fence.closedBy(line) {
				fence = noFence
			}
			continue
		case inComment:
			if strings.Contains(line, "-->") {
				inComment = false
			}
			continue
		}
		body, ok := unindent(line)
		if !ok {
			continue // indented code
		}
		if f, ok := openFence(body); ok {
			fence = f
			continue
		}
		if strings.HasPrefix(body, "<!--") {
			inComment = !strings.Contains(body[len("<!--"):], "-->")
			continue
		}
		if text, ok := h1Text(strings.ReplaceAll(body, "\r", " ")); ok { // a lone CR: see nextLine
			text = strings.TrimSpace(norm.NFC.String(validUTF8(text)))
			if text != "" {
				// a copy of just the title, not a substring of its line
				return strings.Clone(text)
			}
		}
	}
	return fallback
}

// skipFrontMatter returns b after a YAML front matter block (a first line
// "---" up to a line "---" or "..."), or b itself when it has none.
func skipFrontMatter(b []byte) []byte {
	first, rest := nextLine(b)
	if !bytes.Equal(bytes.TrimRight(first, " \t"), []byte("---")) {
		return b
	}
	for len(rest) > 0 {
		var line []byte
		line, rest = nextLine(rest)
		if l := bytes.TrimRight(line, " \t"); bytes.Equal(l, []byte("---")) || bytes.Equal(l, []byte("...")) {
			return rest
		}
	}
	return b
}

// nextLine splits off the first line of b, ended by LF or CRLF. A lone CR
// is not a line end: inside a heading it would cut the title short, and a
// terminal showing it would let the rest overwrite what came before. Title
// makes it a space.
func nextLine(b []byte) (line, rest []byte) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return b, nil
	}
	return bytes.TrimSuffix(b[:i], []byte("\r")), b[i+1:]
}

// h1Text returns the raw text of a level-1 ATX heading whose indentation is
// already removed.
func h1Text(line string) (string, bool) {
	if !strings.HasPrefix(line, "#") {
		return "", false
	}
	rest := line[1:]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return "", false // "##..." or "#x"
	}
	rest = strings.Trim(rest, " \t")
	// Closing sequence: a run of '#'s that is the whole text or follows a space or tab.
	end := len(rest)
	for end > 0 && rest[end-1] == '#' {
		end--
	}
	if end == 0 {
		return "", true
	}
	if end < len(rest) && (rest[end-1] == ' ' || rest[end-1] == '\t') {
		rest = strings.TrimRight(rest[:end], " \t")
	}
	return rest, true
}

// fence is an open fenced code block: its character and length.
type fence struct {
	char byte
	n    int
}

var noFence = fence{}

func (f fence) open() bool { return f.n > 0 }

// openFence reports whether an unindented line opens a fenced code block.
func openFence(line string) (fence, bool) {
	if line == "" || (line[0] != '`' && line[0] != '~') {
		return noFence, false
	}
	c := line[0]
	n := countPrefix(line, c)
	if n < 3 {
		return noFence, false
	}
	if c == '`' && strings.IndexByte(line[n:], '`') >= 0 {
		return noFence, false // a backtick fence's info string has no backticks
	}
	return fence{char: c, n: n}, true
}

// closedBy reports whether a line closes the fence: up to three spaces, at
// least as many of the same character, then only spaces or tabs.
func (f fence) closedBy(line string) bool {
	rest, ok := unindent(line)
	if !ok {
		return false
	}
	n := countPrefix(rest, f.char)
	return n >= f.n && strings.Trim(rest[n:], " \t") == ""
}

// unindent removes up to three leading spaces; ok is false when the line is
// indented further (four spaces or a tab reach a code block's indentation).
func unindent(line string) (string, bool) {
	n := 0
	for n < len(line) && line[n] == ' ' {
		n++
	}
	if n >= 4 || (n < len(line) && line[n] == '\t') {
		return line, false
	}
	return line[n:], true
}

func countPrefix(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}

func baseName(path string) string {
	return path[strings.LastIndexByte(path, '/')+1:]
}

// validUTF8 replaces each invalid byte with U+FFFD, like encoding/json.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func hasSuffixFold(s, suffix string) bool {
	return len(s) >= len(suffix) && equalFoldASCII(s[len(s)-len(suffix):], suffix)
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
