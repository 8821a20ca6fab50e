package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The shape docs/design.md promises: cmd/syncjob is the CLI only (every
// file short, the whole small), no production function is longer than a
// reader holds at once, and the two pages a newcomer reads stay short. A
// file that grows past these is a sign that a concern belongs in a package
// (or a page) of its own.
const (
	maxCommandFileLines = 300
	maxCommandLines     = 1500
	maxFunctionLines    = 60
	maxREADMELines      = 200  // a newcomer's and an operator's page
	maxDesignWords      = 4000 // half of what docs/design.md was before it was cut to the facts
)

func TestStructure_DocsShort(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n >= maxREADMELines {
		t.Errorf("README.md: %d lines, want fewer than %d", n, maxREADMELines)
	}
	design, err := os.ReadFile(filepath.Join(repoRoot, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(string(design))); n >= maxDesignWords {
		t.Errorf("docs/design.md: %d words, want fewer than %d: say each fact once, figures belong in docs/bench.md", n, maxDesignWords)
	}
}

func TestStructure_CommandIsTheCLI(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n := strings.Count(string(b), "\n")
		total += n
		if n > maxCommandFileLines {
			t.Errorf("cmd/syncjob/%s: %d lines, want at most %d", f, n, maxCommandFileLines)
		}
	}
	if total == 0 || total >= maxCommandLines {
		t.Errorf("cmd/syncjob: %d non-test lines, want fewer than %d", total, maxCommandLines)
	}
}

func TestStructure_NoFunctionOver60Lines(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	funcs := 0
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata"):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go"):
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			funcs++
			if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > maxFunctionLines {
				rel, _ := filepath.Rel(repoRoot, p)
				t.Errorf("%s: func %s is %d lines, want at most %d", rel, fn.Name.Name, n, maxFunctionLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if funcs < 100 {
		t.Fatalf("found %d production functions under %s: the walk missed the code", funcs, repoRoot)
	}
}
