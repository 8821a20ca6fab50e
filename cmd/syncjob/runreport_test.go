package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/report"
	"github.com/knue/syncjob/internal/syncer"
)

// goldenReports are the run reports this file's fixes shape: a failed run's
// long plan cut at 20 rows, a third failure shown once, one request said
// in the singular.
func goldenReports() string {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	var b bytes.Buffer
	b.WriteString("$ syncjob sync (failed before writing a plan of 30 adds)\n")
	long := syncer.Result{Summary: policy.RunSummary{Mode: "full", Status: "failed", Requests: map[string]int64{"github": 1, "registry": 2}}}
	for i := range 30 {
		name := fmt.Sprintf("규정 %02d", i)
		long.Plan.Items = append(long.Plan.Items, policy.Item{Action: policy.ActAdd, PolicyName: name, Path: "규정/" + name + ".md"})
	}
	report.NewRun(long, errors.New("github: download archive: rate limit exceeded; retry after 2026-11-25T17:00:00Z"), false, nil).Write(&b, false, report.Palette{})

	b.WriteString("\n$ syncjob sync (a third failure: now a dead letter)\n")
	third := syncer.Result{
		Summary: policy.RunSummary{CommitSHA: sha, Mode: "incremental", Status: policy.RunPartial, Updated: 1, ErrorCount: 1,
			Failures: []policy.Failure{{PolicyName: "학칙", Error: "read content: HTTP 502"}},
			HeldBack: []policy.Skip{{PolicyName: "학칙", Path: "규정/제1편/학칙.md", Reason: "dead letter (syncjob deadletter retry 학칙)"}},
			Requests: map[string]int64{"github": 8, "registry": 10}, PhasesMs: map[string]int64{"apply": 3}},
		Plan: policy.Plan{
			Items:    []policy.Item{{Action: policy.ActUpdate, PolicyName: "연구소 설치(운영)․규정", Path: "규정/제2편/연구소 설치(운영)․규정.md", Title: "연구소 설치․운영 규정"}},
			HeldBack: []policy.Skip{{PolicyName: "학칙", Path: "규정/제1편/학칙.md", Reason: "dead letter (syncjob deadletter retry 학칙)"}},
		},
	}
	report.NewRun(third, fmt.Errorf("%w: 1: 학칙", syncer.ErrPartial), false, nil).Write(&b, false, report.Palette{})

	b.WriteString("\n$ syncjob sync (an older dead letter beside a new failure)\n")
	older := third
	older.Summary.ErrorCount = 2
	older.Summary.Failures = append(older.Summary.Failures, policy.Failure{PolicyName: "대학원 학칙", Error: "read content: HTTP 500"})
	older.Plan.HeldBack = append(older.Plan.HeldBack, policy.Skip{PolicyName: "교칙", Path: "규정/교칙.md", Reason: "dead letter (syncjob deadletter retry 교칙)"})
	older.Summary.HeldBack = older.Plan.HeldBack
	report.NewRun(older, fmt.Errorf("%w: 2: 대학원 학칙, 학칙", syncer.ErrPartial), false, nil).Write(&b, false, report.Palette{})

	b.WriteString("\n$ syncjob sync (head unchanged)\n")
	same := syncer.Result{Summary: policy.RunSummary{CommitSHA: sha, Mode: "unchanged", Status: "success", Requests: map[string]int64{"github": 1, "registry": 1}}}
	report.NewRun(same, nil, false, nil).Write(&b, false, report.Palette{})
	return b.String()
}

func TestReports_Golden(t *testing.T) {
	t.Parallel()
	got := goldenReports()
	const path = "testdata/reports.golden"
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
		t.Errorf("reports (-%s +got):\n%s", path, diff)
	}
	for _, bad := range []string{"1 requests", "(queued for retry), 1 held back"} {
		if strings.Contains(got, bad) {
			t.Errorf("reports say %q:\n%s", bad, got)
		}
	}
}

func TestSync_Quiet_OneLineNoLogs(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.stderrTerminal = true
	w.env["LOG_FORMAT"] = "auto"
	r := w.sync(exitOK, "--quiet")
	if strings.Count(r.stdout, "\n") != 1 || !strings.HasPrefix(r.stdout, "synced ") || r.stderr != "" {
		t.Errorf("sync --quiet: want one line on stdout, nothing on stderr\nstdout %q\nstderr %q", r.stdout, r.stderr)
	}
	w.gh.FailNext(githubtest.AnyKind, -1, githubtest.ServerError(502))
	r = w.sync(exitFailed, "--quiet")
	if strings.Count(r.stdout, "\n") != 1 || !strings.HasPrefix(r.stdout, "failed: ") || r.stderr != "" {
		t.Errorf("failed sync --quiet: want one line on stdout, nothing on stderr\nstdout %q\nstderr %q", r.stdout, r.stderr)
	}
}

func TestSync_Failure_PrintedOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.gh.FailNext(githubtest.AnyKind, -1, githubtest.ServerError(502))
	r := w.sync(exitFailed)
	const msg = "github: get head of knue/policies branch main: HTTP 502: Server Error"
	if n := strings.Count(r.stdout, msg); n != 1 {
		t.Errorf("stdout says the error %d times, want once:\n%s", n, r.stdout)
	}
	for _, line := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(line, "syncjob: ") {
			t.Errorf("stderr repeats the error the first line said: %q", line)
		}
	}
	w.gh.ClearFaults()
	w.sync(exitOK)
	w.repo.Write("규정/제1편/학칙.md", "# 개정\n")
	w.repo.Write("규정/제1편/대학원 학칙.md", "# 대학원 개정\n")
	head := w.repo.Commit("two edits")
	w.gh.FailWithin(githubtest.KindBlob, w.repo.BlobSHA(head, "규정/제1편/학칙.md"), githubtest.ServerError(500))
	r = w.sync(exitPartial)
	if strings.Contains(r.stderr, "syncjob: ") || len(regexp.MustCompile(`(?m)^  !  학칙 `).FindAllString(r.stdout, -1)) != 1 {
		t.Errorf("a partial run's failure is said more than once:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
}

func TestSync_JSON_EmptyListsNotNull(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.sync(exitOK)
	r := w.sync(exitOK, "--json") // head unchanged: nothing planned
	var out struct{ Plan map[string]any }
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	for _, k := range []string{"items", "skipped", "conflicts"} {
		if v, ok := out.Plan[k].([]any); !ok || len(v) != 0 {
			t.Errorf("plan.%s = %#v, want []", k, out.Plan[k])
		}
	}
}
