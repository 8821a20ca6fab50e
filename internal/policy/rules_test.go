package policy_test

import (
	"runtime"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// nfd returns s in Unicode NFD, as macOS commits file names.
func nfd(s string) string { return norm.NFD.String(s) }

func TestIsPolicyPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path string
		want bool
	}{
		{"학칙.md", true},
		{"규정/학칙(개정)․2024 본문.md", true},
		{nfd("규정/학칙(개정)․2024 본문.md"), true},
		{"a/b/c/x.md", true},
		{"X.MD", true},
		{"x.Md", true},
		{"a:b.md", true},
		{"README.md", false},
		{"readme.MD", false},
		{"docs/ReadMe.md", false},
		{"a/b/README.MD", false},
		{"README.md.md", true},
		{"my-README.md", true},
		{".github/pull_request_template.md", false},
		{"docs/.hidden/x.md", false},
		{".x.md", false},
		{"docs/.x.md", false},
		{".md", false},
		{"x.txt", false},
		{"x.md.txt", false},
		{"x.markdown", false},
		{"xmd", false},
		{"docs/", false},
		{"", false},
		{"a.md/b.txt", false},
		{"\xff\xfe.md", true},
		{"a/\xff/.b.md", false},
	}
	for _, tt := range tests {
		if got := policy.IsPolicyPath(tt.path); got != tt.want {
			t.Errorf("IsPolicyPath(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

func TestNameOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path string
		want string
	}{
		{"학칙.md", "학칙"},
		{"규정/학칙(개정)․2024 본문.md", "학칙(개정)․2024 본문"},
		{nfd("규정/학칙(개정)․2024 본문.md"), "학칙(개정)․2024 본문"},
		{nfd("학칙.md"), "학칙"},
		{"a/b/X.MD", "X"},
		{"x.Md", "x"},
		{"a.md.md", "a.md"},
		{"a b  c.md", "a b  c"},
		{"a:b.md", "a:b"},
		{"no-suffix", "no-suffix"},
		{"\xff.md", "\uFFFD"},
		{"a\xff\xfeb.md", "a\uFFFD\uFFFDb"},
		{nfd("é") + "\xff.md", "é\uFFFD"},
	}
	for _, tt := range tests {
		if got := policy.NameOf(tt.path); got != tt.want {
			t.Errorf("NameOf(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

func TestNameOf_NFDEqualsNFC(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"학칙", "학칙(개정)․2024 본문", "Café", "한국교원대학교 학칙 시행세칙"} {
		nfcPath, nfdPath := "규정/"+name+".md", nfd("규정/"+name+".md")
		if nfcPath == nfdPath {
			t.Fatalf("test data: %q has no NFD form", name)
		}
		if a, b := policy.NameOf(nfcPath), policy.NameOf(nfdPath); a != b {
			t.Errorf("NameOf(NFC) = %q, NameOf(NFD) = %q", a, b)
		}
	}
}

func TestKeyFits(t *testing.T) {
	t.Parallel()
	longest := len(registry.DeadLetterPrefix)
	tests := []struct {
		name string
		want bool
	}{
		{"학칙", true},
		{strings.Repeat("a", policy.MaxKeyBytes-longest), true},
		{strings.Repeat("a", policy.MaxKeyBytes-longest+1), false},
		// Fits policy: but not dead-letter:.
		{strings.Repeat("a", policy.MaxKeyBytes-len(registry.PolicyPrefix)), false},
		// 3-byte Hangul: 166 syllables = 498 bytes, 167 = 501.
		{strings.Repeat("가", 166), true},
		{strings.Repeat("가", 167), false},
	}
	for _, tt := range tests {
		if got := policy.KeyFits(tt.name); got != tt.want {
			t.Errorf("KeyFits(%d bytes) = %v, want %v", len(tt.name), got, tt.want)
		}
	}
}

func TestTitle(t *testing.T) {
	t.Parallel()
	const fb = "fallback"
	tests := []struct {
		name    string
		content string
		want    string
	}{
		{"simple", "# 한국교원대학교 학칙\n\n본문", "한국교원대학교 학칙"},
		{"trimmed", "#    Title   \n", "Title"},
		{"tab after hash", "#\tTitle\n", "Title"},
		{"three spaces", "   # Title", "Title"},
		{"four spaces is code", "    # Code\n# Title", "Title"},
		{"leading tab is code", "\t# Code\n# Title", "Title"},
		{"no space is not heading", "#Title\n# Real", "Real"},
		{"level 2 is not level 1", "## Sub\n# Real", "Real"},
		{"only level 2", "## Sub\n### Subsub", fb},
		{"empty heading skipped", "# \n#\n# Real", "Real"},
		{"only closing hashes is empty", "# ##\n# Real", "Real"},
		{"closing hashes stripped", "# Title ##", "Title"},
		{"closing hashes after tab", "# Title\t#", "Title"},
		{"hash without space kept", "# Title#", "Title#"},
		{"escaped hash kept", `# Title \#`, `Title \#`},
		{"inner hashes kept", "# C# and F# ok", "C# and F# ok"},
		{"closing then spaces", "# Title ###   ", "Title"},
		{"none", "just text\n\nmore", fb},
		{"empty", "", fb},
		{"bom", "\uFEFF# Title", "Title"},
		{"bom and crlf", "\uFEFF# Title\r\nbody\r\n", "Title"},
		{"crlf", "intro\r\n# Title\r\n", "Title"},
		{"lone cr is not a line end", "intro\r# Title\rbody", fb},
		{"lone cr inside the heading does not cut it", "# Official title\rFake title\nbody", "Official title Fake title"},
		{"lone cr before crlf", "# Title\r\r\nbody", "Title"},
		{"lone cr before closing hashes", "# Title\r##\r\n", "Title"},
		{"front matter", "---\ntitle: x\n# not this\n---\n# Title", "Title"},
		{"front matter closed by dots", "---\n# no\n...\n# Title", "Title"},
		{"front matter crlf", "---\r\n# no\r\n---\r\n# Title\r\n", "Title"},
		{"front matter after bom", "\uFEFF---\n# no\n---\n# Title", "Title"},
		{"unclosed front matter is a rule", "---\n# Title\n", "Title"},
		{"dashes not first line", "text\n---\n# Title\n---", "Title"},
		{"backtick fence", "```\n# no\n```\n# Title", "Title"},
		{"tilde fence", "~~~md\n# no\n~~~\n# Title", "Title"},
		{"fence needs same char", "```\n# no\n~~~\n# no either\n```\n# Title", "Title"},
		{"fence needs length", "````\n# no\n```\n# no either\n````\n# Title", "Title"},
		{"longer closing fence", "```\n# no\n`````\n# Title", "Title"},
		{"closing fence with info is content", "```\n# no\n``` x\n# no either\n```\n# Title", "Title"},
		{"closing fence indented four is content", "```\n    ```\n# no\n```\n# Title", "Title"},
		{"indented fence", "  ```\n# no\n   ```\n# Title", "Title"},
		{"unclosed fence", "```\n# no\n", fb},
		{"backticks in info is not a fence", "``` a`b\n# Title", "Title"},
		{"two backticks is not a fence", "``\n# Title", "Title"},
		{"html comment", "<!--\n# no\n-->\n# Title", "Title"},
		{"html comment one line", "<!-- x -->\n# Title", "Title"},
		{"block quote", "> # Quote\n# Title", "Title"},
		{"list", "- # Item\n# Title", "Title"},
		{"first wins", "# One\n# Two", "One"},
		{"nbsp only is empty", "# \u00a0\n# Title", "Title"},
		{"nfd normalised", nfd("# 학칙"), "학칙"},
		{"invalid utf8", "# a\xffb", "a\uFFFDb"},
		{"korean punctuation", "# 학칙(개정)․2024: 본문", "학칙(개정)․2024: 본문"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := policy.Title([]byte(tt.content), fb); got != tt.want {
				t.Errorf("Title(%q) = %q, want %q", tt.content, got, tt.want)
			}
		})
	}
}

func FuzzTitle(f *testing.F) {
	for _, s := range []string{
		"# Title", "\uFEFF---\n# no\n---\n# 학칙\r\n", "```\n# a\n```\n#\tb #", "# #\n# \u00a0x\u2028\n",
		"<!--\n# a\n-->", "   # x ##  ", "# a\xffb", "---\n...\n# c", "~~~~\n~~~\n# d",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		got := policy.Title(content, "fallback")
		if got == "" {
			t.Fatalf("Title(%q) is empty", content)
		}
		if strings.ContainsAny(got, "\r\n") {
			t.Errorf("Title(%q) = %q has a line break", content, got)
		}
		if r, _ := utf8.DecodeRuneInString(got); unicode.IsSpace(r) {
			t.Errorf("Title(%q) = %q has leading space", content, got)
		}
		if r, _ := utf8.DecodeLastRuneInString(got); unicode.IsSpace(r) {
			t.Errorf("Title(%q) = %q has trailing space", content, got)
		}
		if !utf8.ValidString(got) {
			t.Errorf("Title(%q) = %q is not valid UTF-8", content, got)
		}
	})
}

func FuzzNameOf(f *testing.F) {
	for _, s := range []string{
		"학칙.md", nfd("규정/학칙(개정)․2024 본문.md"), "a/b/X.MD", "\xff.md", ".github/x.md", "a.md.md", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		name := policy.NameOf(path)
		policy.IsPolicyPath(path)
		if !utf8.ValidString(name) {
			t.Fatalf("NameOf(%q) = %q is not valid UTF-8", path, name)
		}
		if !norm.NFC.IsNormalString(name) {
			t.Errorf("NameOf(%q) = %q is not NFC", path, name)
		}
		if strings.Contains(name, "/") {
			t.Errorf("NameOf(%q) = %q has a folder", path, name)
		}
		// Idempotent: the name, as a file again, is its own name, in any folder or form.
		for _, p := range []string{name + ".md", "dir/" + name + ".MD", nfd(name) + ".md"} {
			if again := policy.NameOf(p); again != name {
				t.Errorf("NameOf(%q) = %q, want %q (from %q)", p, again, name, path)
			}
		}
	})
}

// A run keeps every title it reads until it ends: a title must not keep its
// file's content alive with it (memory would grow with file size).
func TestTitle_DoesNotKeepTheFileAlive(t *testing.T) {
	body := []byte("# 규정\n" + strings.Repeat("제1조 목적 가나다라마바사\n", 1<<20/40))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	// 16 files: a title that pinned its file would keep 16 MiB, four times
	// the bound (each copy costs the race detector a pass over its bytes).
	titles := make([]string, 16)
	for i := range titles {
		content := append([]byte(nil), body...)
		titles[i] = policy.Title(content, "x")
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 4<<20 {
		t.Errorf("16 titles of 1 MiB files keep %d MiB of heap: each pins its file", grown>>20)
	}
	runtime.KeepAlive(titles)
	if titles[0] != "규정" {
		t.Fatalf("title %q", titles[0])
	}
}
