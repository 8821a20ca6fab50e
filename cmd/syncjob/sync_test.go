package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/report"
)

// firstLine returns the first line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func TestSync_Refused_SaysSoFirst_PlanNotApplied(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		seed(w)
		w.sync(0)
		w.repo.Remove("규정")
		w.repo.Commit("empty the tree")
		r := w.sync(exitRefused)
		if got := firstLine(r.stdout); !strings.HasPrefix(got, "refused: mass-delete guard: the plan deletes all 3 policies") || !strings.HasSuffix(got, "no policy written") {
			t.Errorf("first line %q, want refused: with the guard's reason", got)
		}
		if strings.Contains(r.stdout, "synced") {
			t.Errorf("a refused run says synced:\n%s", r.stdout)
		}
		for _, want := range []string{"planned, not applied:\n", "  -  학칙  ", "Plan: 0 to add, 0 to change, 0 to move, 3 to delete.\n"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("output lacks %q:\n%s", want, r.stdout)
			}
		}
		j := w.sync(exitRefused, "--json")
		var out report.RunJSON
		if err := json.Unmarshal([]byte(j.stdout), &out); err != nil {
			t.Fatalf("--json: %v\n%s", err, j.stdout)
		}
		if out.Outcome != "refused" || out.Applied || !strings.Contains(out.Error, "mass-delete") || len(out.Plan.Items) != 3 {
			t.Errorf("--json outcome %q applied %v error %q, %d planned items", out.Outcome, out.Applied, out.Error, len(out.Plan.Items))
		}
	})
}

func TestSync_GitHubDown_FailedFirstNoEmptySummary(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.gh.FailNext(githubtest.AnyKind, -1, githubtest.ServerError(502))
	r := w.sync(exitFailed)
	if got := firstLine(r.stdout); !strings.HasPrefix(got, "failed: ") || !strings.Contains(got, "502") || !strings.HasSuffix(got, "no policy written") {
		t.Errorf("first line %q, want failed: naming the 502", got)
	}
	for _, bad := range []string{"synced", "- mode", "Plan:"} {
		if strings.Contains(r.stdout, bad) {
			t.Errorf("output of a run that read nothing has %q:\n%s", bad, r.stdout)
		}
	}
}

func TestSync_RateLimitedAfterPlanning_FailedPlanNotApplied(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for i := range 12 { // over 10 files to read: they come from the tarball
		w.repo.Write(fmt.Sprintf("규정/규정 %02d.md", i), fmt.Sprintf("# 규정 %02d\n", i))
	}
	w.repo.Commit("twelve")
	w.gh.FailNext(githubtest.KindArchiveLink, -1, githubtest.PrimaryRateLimit(403, time.Now().Add(time.Hour)))
	r := w.sync(exitFailed)
	if got := firstLine(r.stdout); !strings.HasPrefix(got, "failed: ") || !strings.Contains(got, "rate limit") {
		t.Errorf("first line %q, want failed: with the rate limit", got)
	}
	if strings.Contains(r.stdout, "synced") || !strings.Contains(r.stdout, "planned, not applied:\n") || !strings.Contains(r.stdout, "Plan: 12 to add") {
		t.Errorf("want the plan labelled not applied:\n%s", r.stdout)
	}
}

func TestSync_Partial_FailedLinesMarked(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.sync(0)
	w.repo.Write("규정/제1편/학칙.md", "# 한국교원대학교 학칙 (개정)\n")
	w.repo.Write("규정/제1편/대학원 학칙.md", "# 한국교원대학교 대학원 학칙 (개정)\n")
	head := w.repo.Commit("edit")
	// one file GitHub cannot serve beside one it can: every read failing
	// would be an outage, not a failed item
	w.gh.FailWithin(githubtest.KindBlob, w.repo.BlobSHA(head, "규정/제1편/학칙.md"), githubtest.ServerError(500))
	r := w.sync(exitPartial)
	if got := firstLine(r.stdout); !strings.HasPrefix(got, "partial ") || !strings.Contains(got, "1 failed (queued for retry)") {
		t.Errorf("first line %q, want partial with the failure", got)
	}
	if !regexp.MustCompile(`(?m)^  !  학칙 +failed: read content: .*HTTP 500`).MatchString(r.stdout) {
		t.Errorf("the failed policy is not marked !:\n%s", r.stdout)
	}
}

func TestSync_PlanOneSymbolPerChange_ClosingLine(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.sync(0)
	w.repo.Write("규정/제3편/신규.md", "# 신규\n")
	w.repo.Write("규정/제1편/학칙.md", "# 한국교원대학교 학칙 (개정)\n")
	w.repo.Move("규정/제2편/연구소 설치(운영)․규정.md", "규정/제9편/연구소 설치(운영)․규정.md")
	w.repo.Remove("규정/제1편/대학원 학칙.md")
	head := w.repo.Commit("one of each")
	r := w.sync(0)
	want := []string{
		"synced " + head[:7] + ": incremental mode, 1 added, 1 updated, 1 moved, 1 deleted, 0 unchanged, 0 skipped, 0 failed (github ",
		"  +  신규  ",
		"  ~  학칙  ",
		"  →  연구소 설치(운영)․규정  규정/제2편/연구소 설치(운영)․규정.md → 규정/제9편/연구소 설치(운영)․규정.md",
		"  -  대학원 학칙  ",
		"\nPlan: 1 to add, 1 to change, 1 to move, 1 to delete.\n",
	}
	for _, s := range want {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("output lacks %q:\n%s", s, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "not applied") {
		t.Errorf("an applied plan is labelled not applied:\n%s", r.stdout)
	}
	q := w.sync(0, "--quiet")
	if lines := strings.Split(strings.TrimSpace(q.stdout), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "synced ") {
		t.Errorf("--quiet printed %d lines, want the summary alone:\n%s", len(lines), q.stdout)
	}
}

func TestSync_Colour_OnATerminalOnly_OffWithNoColor(t *testing.T) {
	t.Parallel()
	const plus = "\x1b[32m+\x1b[0m"
	for _, tc := range []struct {
		name     string
		terminal bool
		noColor  string
		want     bool
	}{
		{"terminal", true, "", true},
		{"terminal, NO_COLOR", true, "1", false},
		{"piped", false, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			seed(w)
			w.stdoutTerminal = tc.terminal
			w.env["NO_COLOR"] = tc.noColor
			r := w.sync(0, "--dry-run")
			if got := strings.Contains(r.stdout, plus); got != tc.want {
				t.Errorf("coloured + %v, want %v:\n%q", got, tc.want, r.stdout)
			}
			if !tc.want && strings.Contains(r.stdout, "\x1b[") {
				t.Errorf("an escape sequence without colour:\n%q", r.stdout)
			}
		})
	}
}

func TestSync_DryRun_CreatesNoRegistryFile(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	r := w.sync(0, "--dry-run")
	if _, err := os.Stat(w.db); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a dry run created the registry file (stat: %v)", err)
	}
	if _, err := os.Stat(w.db + ".lock"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a dry run left a lock file (stat: %v)", err)
	}
	if !strings.Contains(r.stdout, "Plan: 3 to add") || !strings.Contains(r.stderr, "planning against an empty registry") {
		t.Errorf("dry run of a missing registry:\n%s\n%s", r.stdout, r.stderr)
	}
}

func TestSync_HeldBackByDeadLetter_Marked(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	deadLetterWorld(t, w)
	r := w.run("sync", "--full")
	if !regexp.MustCompile(`(?m)^  !  학칙 +규정/제1편/학칙.md +held back: dead letter \(syncjob deadletter retry 학칙\)$`).MatchString(r.stdout) {
		t.Errorf("the held-back version is not marked (exit %d):\n%s", r.code, r.stdout)
	}
}
