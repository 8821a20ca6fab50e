package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/report"
	"github.com/knue/syncjob/internal/syncer"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

// nfd is 학칙 decomposed into jamo, as a Mac may commit it.
const nfd = "\u1112\u1161\u11a8\u110e\u1175\u11a8"

func TestCells_ScreenWidth(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]int{
		"학칙":                 4, // a Hangul syllable takes two cells
		nfd:                  4, // decomposed, the vowel and final consonant take none
		"a․b":                3, // U+2024 takes one
		"연구소 설치(운영)․규정":      22,
		"policy.md":          9,
		"규정/제1편/학칙.md":       18,
		"e\u0301":            1,  // a combining accent
		"tab\there\x1b[31m!": 24, // made printable first, each control shown as a 6-cell escape (\u0009)
	} {
		if got := report.Width(report.Printable(s)); got != want {
			t.Errorf("width of %q = %d, want %d", s, got, want)
		}
	}
}

// goldenTables are the tables of every command, on names of Korean, ASCII and
// U+2024 (․), in one file.
func goldenTables() string {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	const at = "2026-11-25T16:00:00Z"
	entries := []policy.Entry{
		{PolicyName: "policy", Title: "Policy (English)", Path: "docs/policy.md", SHA: sha, LastUpdated: at},
		{PolicyName: "연구소 설치(운영)․규정", Title: "연구소 설치․운영 규정", Path: "규정/제2편/연구소 설치(운영)․규정.md", SHA: sha, LastUpdated: at},
		{PolicyName: "학칙", Title: "한국교원대학교 학칙", Path: "규정/" + nfd + ".md", SHA: sha, LastUpdated: at},
		{PolicyName: "a b:c(d)․e", Title: "Mixed 한글 and ASCII", Path: "규정/제 1 편: (총칙)/a b:c(d)․e.md", SHA: sha, LastUpdated: at},
	}
	errMsg := "HTTP 500: Server Error"
	queue := []policy.QueueEntry{
		{PolicyName: "학칙", SHA: sha, Operation: "update", RetryCount: 2, CreatedAt: at, ErrorMessage: &errMsg},
		{PolicyName: "연구소 설치(운영)․규정", SHA: sha, Operation: "add", CreatedAt: at},
		{PolicyName: "policy", SHA: sha, Operation: "add", CreatedAt: at},
	}
	dead := []policy.DeadLetter{
		{QueueEntry: queue[0], DeadAt: at, Reason: errMsg},
		{QueueEntry: policy.QueueEntry{PolicyName: "a b:c(d)․e", SHA: sha, Operation: "add", RetryCount: 3}, DeadAt: at, Reason: "unsuccessful key"},
	}
	runs := []policy.RunSummary{
		{Timestamp: at, Status: "success", Mode: "incremental", Trigger: "schedule", Added: 1, CommitSHA: sha, DurationMs: 1234},
		{Timestamp: at, Status: "partial", Mode: "full", Trigger: "cli", Added: 120, ErrorCount: 3, CommitSHA: sha, DurationMs: 61500},
	}
	res := syncer.Result{
		Summary: policy.RunSummary{CommitSHA: sha, Mode: "incremental", Status: "success", Added: 1, Updated: 1, Moved: 1, Deleted: 1,
			Requests: map[string]int64{"github": 5, "registry": 9}},
		Plan: policy.Plan{
			Items: []policy.Item{
				{Action: policy.ActAdd, PolicyName: "연구소 설치(운영)․규정", Path: "규정/제2편/연구소 설치(운영)․규정.md", Title: "연구소 설치․운영 규정"},
				{Action: policy.ActUpdate, PolicyName: "학칙", Path: "규정/" + nfd + ".md", Title: "한국교원대학교 학칙"},
				{Action: policy.ActMove, PolicyName: "policy", Old: &policy.Old{Path: "docs/policy.md"}, Path: "docs/규정/policy.md", Title: "Policy"},
				{Action: policy.ActDelete, PolicyName: "a b:c(d)․e", Old: &policy.Old{Path: "a b:c(d)․e.md"}},
			},
			Skipped:   []policy.Skip{{PolicyName: "빈 규정", Path: "규정/빈 규정.md", Reason: "empty file"}},
			Conflicts: []policy.Conflict{{PolicyName: "규정", Winner: "a폴더/규정.md", Losers: []string{"z폴더/규정.md"}}},
		},
	}
	var b bytes.Buffer
	b.WriteString("$ syncjob list\n")
	report.Policies(&b, entries)
	b.WriteString("\n$ syncjob queue list\n")
	report.Queue(&b, queue)
	b.WriteString("\n$ syncjob deadletter list\n")
	report.DeadLetters(&b, dead)
	b.WriteString("\n$ syncjob status (recent runs)\n")
	report.PrintRecentRuns(&b, runs)
	b.WriteString("\n$ syncjob sync\n")
	report.NewRun(res, nil, false, nil).Write(&b, false, report.Palette{})
	b.WriteString("\n$ syncjob sync --dry-run\n")
	report.NewRun(res, nil, true, nil).Write(&b, false, report.Palette{})
	b.WriteString("\n$ syncjob sync (refused)\n")
	refused := fmt.Errorf("%w: the plan loses all 4 policies (a wrong branch or path?); run with --allow-mass-delete if that is meant", differ.ErrRefused)
	report.NewRun(res, refused, false, nil).Write(&b, false, report.Palette{})
	b.WriteString("\n$ syncjob sync (partial)\n")
	partial := res
	partial.Summary.Status, partial.Summary.ErrorCount = policy.RunPartial, 1
	partial.Summary.Failures = []policy.Failure{{PolicyName: "학칙", Error: "HTTP 500: Server Error"}}
	partial.Summary.PhasesMs = map[string]int64{"apply": 12}
	report.NewRun(partial, fmt.Errorf("%w: 1: 학칙", syncer.ErrPartial), false, nil).Write(&b, false, report.Palette{})
	b.WriteString("\n$ syncjob sync (failed while writing)\n")
	report.NewRun(partial, errors.New("registry: cloudflare api rate limit; retry after 2026-11-25T16:05:00Z"), false, nil).Write(&b, false, report.Palette{})
	return b.String()
}

func TestTables_Golden_AlignedByScreenWidth(t *testing.T) {
	t.Parallel()
	got := goldenTables()
	const path = "testdata/tables.golden"
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run Golden -update writes it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("tables (-%s +got):\n%s", path, diff)
	}
	for _, block := range tableBlocks(got) {
		assertAligned(t, block)
	}
}

// tableBlocks returns the runs of lines of got that are tables: lines with
// two or more cells.
func tableBlocks(got string) [][]string {
	var blocks [][]string
	var cur []string
	for _, line := range strings.Split(got, "\n") {
		if len(cellStarts(line)) >= 3 {
			cur = append(cur, line)
			continue
		}
		if len(cur) > 1 {
			blocks = append(blocks, cur)
		}
		cur = nil
	}
	return blocks
}

var cellPattern = regexp.MustCompile(`\S+(?: \S+)*`)

// cellStarts returns the screen column where each cell of line begins
// (cells are parted by two spaces or more).
func cellStarts(line string) []int {
	var starts []int
	for _, loc := range cellPattern.FindAllStringIndex(line, -1) {
		starts = append(starts, report.Width(line[:loc[0]]))
	}
	return starts
}

// assertAligned checks that every cell of a table begins at the screen
// column of the cell above it.
func assertAligned(t *testing.T, lines []string) {
	t.Helper()
	head := cellStarts(lines[0])
	for _, line := range lines[1:] {
		starts := cellStarts(line)
		for i := range min(len(starts), len(head)) {
			if starts[i] != head[i] {
				t.Errorf("cell %d starts at column %d, not %d as above:\n%s\n%s", i, starts[i], head[i], lines[0], line)
				break
			}
		}
	}
}

func TestPrintable_InvisibleAndSteeringCharactersShownAsEscapes(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"학칙 (개정)":                                 "학칙 (개정)",
		"invoice\u202Efdp.exe":                    `invoice\u202efdp.exe`,
		"a\u2066b\u2069c\u200Ed\u200Fe\u061C":     `a\u2066b\u2069c\u200ed\u200fe\u061c`,
		"line\u2028para\u2029end":                 `line\u2028para\u2029end`,
		"zero\u200Bwidth\u200C\u200D\u2060\uFEFF": `zero\u200bwidth\u200c\u200d\u2060\ufeff`,
		"nl\nesc\x1b[2Jdel\x7fc1\u0085":           `nl\u000aesc\u001b[2Jdel\u007fc1\u0085`,
		"bad\xffutf8":                             "bad\uFFFDutf8",
	} {
		if got := report.Printable(in); got != want {
			t.Errorf("report.Printable(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSync_HostileTitleAndName_TablesEscapeJSONExact: a title with a bidi
// override, a line separator and zero-width characters, in a file whose
// name holds one too, prints escaped in every table and exact in JSON.
func TestSync_HostileTitleAndName_TablesEscapeJSONExact(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	const name, title = "규정\u202Ecod", "학칙\u2028개정\u200B \u2066x\u2069"
	w.repo.Write("규정/"+name+".md", "# "+title+"\n")
	w.repo.Commit("hostile")
	r := w.sync(0)
	l := w.run("list")
	for where, out := range map[string]string{"sync": r.stdout, "list": l.stdout} {
		if !strings.Contains(out, `규정\u202ecod`) || !strings.Contains(out, `학칙\u2028개정\u200b \u2066x\u2069`) {
			t.Errorf("%s does not show the name and title escaped:\n%s", where, out)
		}
		if strings.ContainsAny(out, "\u202E\u2028\u200B\u2066\u2069") {
			t.Errorf("%s prints the invisible characters raw:\n%s", where, out)
		}
	}
	j := w.run("list", "--json")
	var got []struct{ PolicyName, Title string }
	if err := json.Unmarshal([]byte(j.stdout), &got); err != nil {
		t.Fatalf("list --json: %v\n%s", err, j.stdout)
	}
	found := false
	for _, p := range got {
		found = found || (p.PolicyName == name && p.Title == title)
	}
	if !found {
		t.Errorf("list --json lacks the exact name and title: %+v", got)
	}
}
