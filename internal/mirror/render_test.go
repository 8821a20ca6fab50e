package mirror_test

import (
	"bytes"
	"errors"
	"mime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/knue/syncjob/internal/mirror"
)

func TestRender_KeyContentTypeAndBody(t *testing.T) {
	t.Parallel()
	d := mirror.Doc{PolicyName: "학칙", Title: "학칙", SHA: strings.Repeat("a", 40), Path: "규정/학칙.md",
		LastUpdated: "2026-01-01T00:00:00Z", Content: []byte("\ufeff# 학칙\r\n\r\n본문\r\n")}
	o, err := mirror.Render("kb/policies/", d)
	if err != nil {
		t.Fatal(err)
	}
	if o.Key != "kb/policies/학칙/policy.md" || o.ContentType != "text/markdown; charset=utf-8" {
		t.Fatalf("key %q, content type %q", o.Key, o.ContentType)
	}
	front, err := mirror.FrontMatter(d)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(o.Body, front) || !bytes.Equal(o.Body[len(front):], d.Content) {
		t.Fatalf("body %q, want the front matter then the file exactly", o.Body)
	}
	if want := "---\npolicyName: \"학칙\"\ntitle: \"학칙\"\nsha: \"" + d.SHA + "\"\npath: \"규정/학칙.md\"\nlastUpdated: \"2026-01-01T00:00:00Z\"\n---\n"; string(front) != want {
		t.Fatalf("front matter:\n%s\nwant:\n%s", front, want)
	}
}

func TestRender_SameVersionSameBytes(t *testing.T) {
	t.Parallel()
	d := mirror.Doc{PolicyName: "a", Title: "A", SHA: "s", Path: "a.md", LastUpdated: "2026-01-01T00:00:00Z", Content: []byte("x")}
	a, _ := mirror.Render(mirror.DefaultPrefix, d)
	b, _ := mirror.Render(mirror.DefaultPrefix, d)
	if mirror.ETagOf(a.Body) != mirror.ETagOf(b.Body) || !cmp.Equal(a, b) {
		t.Fatal("one version rendered twice differs: every full run would re-upload it")
	}
}

func TestFrontMatter_HardTitles_RoundTripThroughYAML(t *testing.T) {
	t.Parallel()
	titles := []string{
		"plain", "학칙: 제1조", `say "hi" and 'bye'`, "line one\nline two", "yes", "no", "null", "~", "123", "1e3",
		"#not a comment", "- list", "[a, b]", "{a: b}", "---", "...", "  leading and trailing  ", "tab\there",
		"back\\slash", "&anchor *alias !tag", "%directive", "@at `tick`", "", "\u2024 one-dot leader", "emoji 😀",
		strings.Repeat("긴 제목 ", 40),
	}
	for _, title := range titles {
		d := mirror.Doc{PolicyName: "이름: " + title, Title: title, SHA: "0123", Path: "a/" + title + ".md", LastUpdated: "2026-01-01T00:00:00Z"}
		front, err := mirror.FrontMatter(d)
		if err != nil {
			t.Fatalf("%q: %v", title, err)
		}
		block := strings.TrimSuffix(strings.TrimPrefix(string(front), "---\n"), "---\n")
		var got map[string]any
		if err := yaml.Unmarshal([]byte(block), &got); err != nil {
			t.Fatalf("%q: yaml: %v\n%s", title, err, front)
		}
		want := map[string]any{"policyName": d.PolicyName, "title": title, "sha": "0123", "path": d.Path, "lastUpdated": d.LastUpdated}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", title, diff)
		}
		o, err := mirror.Render(mirror.DefaultPrefix, mirror.Doc{PolicyName: "p", Title: title, Content: []byte("body")})
		if err != nil {
			t.Fatal(err)
		}
		parsed, content, err := mirror.ParseFrontMatter(o.Body)
		if err != nil || parsed.Title != title || string(content) != "body" {
			t.Errorf("%q: parsed %q, content %q, %v", title, parsed.Title, content, err)
		}
	}
}

func TestFrontMatter_InvalidUTF8_Replaced(t *testing.T) {
	t.Parallel()
	front, err := mirror.FrontMatter(mirror.Doc{PolicyName: "p", Title: "bad \xff byte"})
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(front) || !strings.Contains(string(front), "bad \ufffd byte") {
		t.Fatalf("front matter %q", front)
	}
}

func TestEncodeHeader_RoundTrip(t *testing.T) {
	t.Parallel()
	for _, v := range []string{
		"", "plain ascii (path).md", "학칙 제1조", "two\nlines", "=?UTF-8?B?aGk=?=", "ends with =?", "tab\t", "\xff\xfe invalid",
		"emoji 😀", strings.Repeat("규정", 200),
	} {
		enc := mirror.EncodeHeader(v)
		for i := 0; i < len(enc); i++ {
			if enc[i] < ' ' || enc[i] > '~' {
				t.Fatalf("EncodeHeader(%q) = %q: not printable ASCII", v, enc)
			}
		}
		if got := mirror.DecodeHeader(enc); got != v {
			t.Errorf("DecodeHeader(EncodeHeader(%q)) = %q", v, got)
		}
	}
	if got := mirror.EncodeHeader("plain"); got != "plain" {
		t.Fatalf("ascii value encoded: %q", got)
	}
}

func TestDecodeHeader_ReadsWhatS3AndMIMEWrite(t *testing.T) {
	t.Parallel()
	// S3 returns non-ASCII metadata as RFC 2047 words; a Q-encoded or
	// split value, as other writers send, reads as well.
	for _, enc := range []string{mime.BEncoding.Encode("UTF-8", "학칙 제1조"), mime.QEncoding.Encode("utf-8", "학칙 제1조")} {
		if got := mirror.DecodeHeader(enc); got != "학칙 제1조" {
			t.Errorf("DecodeHeader(%q) = %q", enc, got)
		}
	}
	if got := mirror.DecodeHeader("=?bogus"); got != "=?bogus" {
		t.Fatalf("an undecodable value should come back as it is, got %q", got)
	}
}

func TestRender_LongValues_MetadataBounded(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("가", 400) // 1,200 bytes
	name := strings.Repeat("나", 166) // 498 bytes: the longest name the registry takes
	o, err := mirror.Render(mirror.DefaultPrefix, mirror.Doc{PolicyName: name, Title: long, SHA: strings.Repeat("f", 40), Path: long + "/" + long + ".md"})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for k, v := range o.Metadata {
		total += len("x-amz-meta-") + len(k) + len(v)
		if dec := mirror.DecodeHeader(v); !utf8.ValidString(dec) {
			t.Errorf("%s cut inside a rune: %q", k, dec)
		}
	}
	if total > 2048 {
		t.Fatalf("metadata of %d bytes, over S3's 2 KB", total)
	}
	if got := mirror.DecodeHeader(o.Metadata[mirror.MetaPolicyName]); got != name {
		t.Fatal("the policy name must never be cut")
	}
	if d, _, _ := mirror.ParseFrontMatter(o.Body); d.Title != long {
		t.Fatal("the front matter must keep the whole title")
	}
}

func TestRender_RefusesNamesThatLeaveTheirFolder(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "a/b", "..", ".", "a\\b", "nul\x00"} {
		if _, err := mirror.Render(mirror.DefaultPrefix, mirror.Doc{PolicyName: name}); !errors.Is(err, mirror.ErrOutsidePrefix) {
			t.Errorf("Render(%q): %v, want ErrOutsidePrefix", name, err)
		}
	}
}

func TestPolicyNameOf(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]string{
		"policies/학칙 제1조/policy.md": "학칙 제1조",
		"policies/a/policy.md":      "a",
		"policies/a/b/policy.md":    "",
		"policies/a/other.md":       "",
		"policies/policy.md":        "",
		"other/a/policy.md":         "",
		"policies/../policy.md":     "",
	} {
		got, ok := mirror.PolicyNameOf(mirror.DefaultPrefix, key)
		if got != want || ok != (want != "") {
			t.Errorf("PolicyNameOf(%q) = %q, %v; want %q", key, got, ok, want)
		}
	}
}

func TestValidatePrefix(t *testing.T) {
	t.Parallel()
	for prefix, ok := range map[string]bool{
		"policies/": true, "kb/policies/": true, "규정/": true,
		"": false, "policies": false, "/policies/": false, "a//": false, "../x/": false, "./": false, "a\\b/": false,
	} {
		if err := mirror.ValidatePrefix(prefix); (err == nil) != ok {
			t.Errorf("ValidatePrefix(%q) = %v, want ok %v", prefix, err, ok)
		}
	}
}
