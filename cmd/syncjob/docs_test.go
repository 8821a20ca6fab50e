package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/config"
	"github.com/knue/syncjob/internal/lambda"
)

const (
	readmePath     = "../../README.md"
	settingsBegin  = "<!-- settings: generated from internal/config/config.go by go generate ./cmd/syncjob; do not edit -->\n"
	settingsFinish = "<!-- end of settings -->\n"
)

// settingsMarkdown is README's settings table: every setting of config.Settings()
// with its flag and default, then the Lambda functions' own.
func settingsMarkdown() string {
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	code := func(s string) string {
		if s == "" {
			return ""
		}
		return "`" + s + "`"
	}
	var b strings.Builder
	b.WriteString("| env | flag | default | meaning |\n|---|---|---|---|\n")
	for _, s := range config.Settings() {
		def := code(s.Def)
		if s.Required {
			def = "(required by sync)"
		}
		fmt.Fprintf(&b, "| `%s` | `--%s` | %s | %s (%s) |\n", s.Env, s.Flag, cell(def), cell(s.Help), cell(s.Kind))
	}
	for _, s := range lambda.Settings() {
		fmt.Fprintf(&b, "| `%s` | | | %s |\n", s.Env, cell(s.Help))
	}
	return b.String()
}

// TestREADME_SettingsTableIsGenerated fails when README's settings table is
// not the one the code generates; go generate ./cmd/syncjob (-update)
// rewrites it.
func TestREADME_SettingsTableIsGenerated(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok := bytes.Cut(readme, []byte(settingsBegin))
	_, after, ok2 := bytes.Cut(rest, []byte(settingsFinish))
	if !ok || !ok2 {
		t.Fatalf("README.md lacks the markers %q and %q around the settings table", settingsBegin, settingsFinish)
	}
	want := settingsMarkdown()
	if *update {
		// a new slice: before and after share readme's array, and appending
		// to before would write over after
		out := slices.Concat(before, []byte(settingsBegin), []byte(want), []byte(settingsFinish), after)
		if err := os.WriteFile(readmePath, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got := string(rest[:len(rest)-len(after)-len(settingsFinish)]); got != want {
		t.Errorf("README.md's settings table differs from the code; run go generate ./cmd/syncjob\n got:\n%s\nwant:\n%s", got, want)
	}
}

// repoRoot is the repository's top folder, seen from this package.
const repoRoot = "../.."

// docFiles are the pages whose references TestDocs_ReferencesExist checks.
func docFiles(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append(pages, filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "infra", "README.md"))
}

var (
	fencedBlock = regexp.MustCompile("(?ms)^ *```.*?^ *```")
	mdLink      = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	backticked  = regexp.MustCompile("`([^`\\s]+)`")
	repoPrefix  = regexp.MustCompile(`^(\./)?(cmd|internal|docs|schema|infra|testdata|\.ci)/`)
	withExt     = regexp.MustCompile(`^[\w.-]+\.(go|md|json|yaml|yml|sh|txt|tsv)$`)
)

// notInRepo are file names the pages mention that the program or the
// operator creates, or that the policy rules name as examples.
var notInRepo = map[string]bool{
	"out.json":          true, // aws lambda invoke's output
	"NAME.requests.tsv": true, // what the scale bench writes
}

// TestDocs_ReferencesExist checks every relative link, and every backticked
// repository path or file name, of the pages points at something that
// exists: a page must not send its reader to a file that is gone.
func TestDocs_ReferencesExist(t *testing.T) {
	t.Parallel()
	names := map[string]bool{}
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if err == nil {
			names[d.Name()] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	exists := func(p string) bool {
		p = strings.TrimSuffix(strings.TrimSuffix(p, "..."), "…")
		m, _ := filepath.Glob(p)
		return len(m) > 0
	}
	for _, page := range docFiles(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		text := fencedBlock.ReplaceAllString(string(b), "")
		rel, _ := filepath.Rel(repoRoot, page)
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if !exists(filepath.Join(filepath.Dir(page), target)) {
				t.Errorf("%s: link to %s, which does not exist", rel, m[1])
			}
		}
		for _, m := range backticked.FindAllStringSubmatch(text, -1) {
			ref := strings.TrimRight(m[1], ".,:;")
			switch {
			case repoPrefix.MatchString(ref):
				if !exists(filepath.Join(repoRoot, ref)) {
					t.Errorf("%s: `%s` does not exist", rel, ref)
				}
			case withExt.MatchString(ref) && !names[ref] && !notInRepo[ref]:
				t.Errorf("%s: `%s` is no file of the repository", rel, ref)
			}
		}
	}
}

// upperDoc is how a comment or a page cites a document by its file name:
// README.md.
var upperDoc = regexp.MustCompile(`\b[A-Z][A-Z_]*\.md\b`)

// TestDocs_CitedDocumentsExist: a Go comment or a page that cites a
// document by name (README.md) cites one the repository has. Comments cited
// the product contract's file, kept outside the repository, for rules
// docs/design.md states (review).
func TestDocs_CitedDocumentsExist(t *testing.T) {
	t.Parallel()
	have := map[string]bool{}
	var files []string
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == ".git":
			return filepath.SkipDir
		case d.IsDir():
			return nil
		}
		have[d.Name()] = true
		if strings.HasSuffix(p, ".go") || strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if strings.HasSuffix(f, ".md") {
			text = fencedBlock.ReplaceAllString(text, "")
		}
		rel, _ := filepath.Rel(repoRoot, f)
		for i, line := range strings.Split(text, "\n") {
			if strings.HasSuffix(f, ".go") {
				_, comment, ok := strings.Cut(line, "//")
				if !ok {
					continue
				}
				line = comment
			}
			for _, name := range upperDoc.FindAllString(line, -1) {
				if !have[name] {
					t.Errorf("%s:%d cites %s, which the repository does not have", rel, i+1, name)
				}
			}
		}
	}
}
