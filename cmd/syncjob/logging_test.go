package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/config"
	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/report"
)

// logRunFinished logs a line shaped as the syncer's summary line, with a
// duration both as today's count of milliseconds and as a time.Duration.
func logRunFinished(format string) string {
	var b bytes.Buffer
	logger := report.NewLogger(config.Config{LogFormat: format, LogLevel: "info"}, &b, false)
	logger.Info("run finished",
		logkey.Requests, map[string]int64{"registry": 5, "github": 4},
		logkey.Duration, int64(1234),
		logkey.Phases, map[string]int64{"read": 3, "apply": 1500},
		"duration", 1234*time.Millisecond,
		"wait", 90*time.Second,
		"timings", map[string]time.Duration{"fetch": 2500 * time.Millisecond, "plan": 40 * time.Millisecond},
		logkey.Error, "",
	)
	return b.String()
}

func TestLog_Text_ReadByAPerson(t *testing.T) {
	t.Parallel()
	line := logRunFinished("text")
	for _, want := range []string{
		`requests="github=4 registry=5"`,
		" duration=1.2s ",
		`phases="apply=1.5s read=3ms"`,
		" wait=1m30s",
		`timings="fetch=2.5s plan=40ms"`,
	} {
		if !strings.Contains(line, want) {
			t.Errorf("text line lacks %s:\n%s", want, line)
		}
	}
	for _, bad := range []string{"map[", "error=", "durationMs", "1234"} {
		if strings.Contains(line, bad) {
			t.Errorf("text line has %s:\n%s", bad, line)
		}
	}
	var b bytes.Buffer
	report.NewLogger(config.Config{LogFormat: "text", LogLevel: "info"}, &b, false).Error("run finished", logkey.Error, "HTTP 502")
	if !strings.Contains(b.String(), `error="HTTP 502"`) {
		t.Errorf("an error is left out:\n%s", b.String())
	}
}

func TestLog_JSON_DurationsInMilliseconds_KeysKept(t *testing.T) {
	t.Parallel()
	var m map[string]any
	line := logRunFinished("json")
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("%v\n%s", err, line)
	}
	for k, want := range map[string]any{
		"durationMs": 1234.0, // both today's int and a time.Duration end as whole milliseconds
		"waitMs":     90000.0,
		"error":      "", // the syncer's JSON line stays as it is
	} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v\n%s", k, m[k], want, line)
		}
	}
	if ph, _ := m["timingsMs"].(map[string]any); ph["fetch"] != 2500.0 || ph["plan"] != 40.0 {
		t.Errorf("timingsMs = %v, want the time.Durations in milliseconds", m["timingsMs"])
	}
	if req, _ := m["requests"].(map[string]any); req["github"] != 4.0 || req["registry"] != 5.0 {
		t.Errorf("requests = %v, want an object", m["requests"])
	}
	if _, ok := m["wait"]; ok {
		t.Errorf("a duration in nanoseconds: %s", line)
	}
}

func TestLog_ProgressLineClearedBeforeALogLine(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	line := report.NewStatusLine(&b)
	logger := report.NewLogger(config.Config{LogFormat: "auto", LogLevel: "info"}, line, true)
	now := time.Date(2026, 11, 25, 16, 0, 0, 0, time.UTC)
	progress := report.NewProgress(line, func() time.Time { return now })
	progress.Phase("titles")
	now = now.Add(time.Second)
	progress.Advance(1, 3)
	logger.Warn("retrying request")
	now = now.Add(time.Second)
	progress.Advance(2, 3)
	progress.Stop()
	got := b.String()
	if !strings.HasPrefix(got, "\r\x1b[Kreading titles\r\x1b[Kreading titles 1/3 · 1.0/s · 2s left\r\x1b[Ktime=") {
		t.Errorf("the log line is not on a line of its own: %q", got)
	}
	if !strings.HasSuffix(got, "\r\x1b[Kreading titles 2/3 · 1.0/s · 1s left\r\x1b[K") {
		t.Errorf("the progress line is not cleared when done: %q", got)
	}
}

func TestLog_OnATerminal_SyncLogsReadable_NoLineGluedToProgress(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.stderrTerminal = true
	w.env["LOG_FORMAT"] = "auto"
	// A blob answers 502 once: its retry is logged while the progress line stands.
	w.gh.FailNext(githubtest.KindBlob, 1, githubtest.ServerError(502))
	r := w.sync(0)
	if !strings.Contains(r.stderr, "level=WARN") {
		t.Fatalf("no warning logged:\n%q", r.stderr)
	}
	if !strings.Contains(r.stderr, "\r\x1b[Kreading titles") {
		t.Errorf("no progress line drawn:\n%q", r.stderr)
	}
	if glued := regexp.MustCompile(`(reading|planning|applying|recording|uploading)[^\r\n]*(time=|level=)`).FindString(r.stderr); glued != "" {
		t.Errorf("a log line glued onto the progress line: %q", glued)
	}
	fin := regexp.MustCompile(`(?m)^.*msg="run finished".*$`).FindString(r.stderr)
	for _, want := range []string{`requests="github=`, " duration=", " status=success"} {
		if !strings.Contains(fin, want) {
			t.Errorf("run finished lacks %s: %s", want, fin)
		}
	}
	if strings.Contains(fin, `error=""`) || strings.Contains(fin, "map[") {
		t.Errorf("run finished: %s", fin)
	}
}

func TestLog_Text_ChangesAsSymbolsAndNames_JSONKeepsThemWhole(t *testing.T) {
	t.Parallel()
	changes := []policy.RunChange{
		{Action: policy.ActUpdate, PolicyName: "학칙", Path: "규정/학칙.md", OldPath: "규정/학칙.md", SHA: strings.Repeat("b", 40), OldSHA: strings.Repeat("a", 40)},
		{Action: policy.ActMove, PolicyName: "연구소 규정", Path: "규정/3/연구소 규정.md", OldPath: "규정/2/연구소 규정.md"},
		{Action: policy.ActDelete, PolicyName: "대학원 학칙", OldPath: "규정/대학원 학칙.md"},
		{Action: policy.ActAdd, PolicyName: "새 규정", Path: "규정/새 규정.md"},
	}
	var text, js bytes.Buffer
	report.NewLogger(config.Config{LogFormat: "text", LogLevel: "info"}, &text, false).Info("run finished", logkey.Changes, changes)
	if want := `changes="~학칙, →연구소 규정, -대학원 학칙, +새 규정"`; !strings.Contains(text.String(), want) {
		t.Errorf("text line lacks %s:\n%s", want, text.String())
	}
	if strings.Contains(text.String(), "PolicyName") || strings.Contains(text.String(), strings.Repeat("a", 40)) {
		t.Errorf("text line prints the structs:\n%s", text.String())
	}
	report.NewLogger(config.Config{LogFormat: "json", LogLevel: "info"}, &js, false).Info("run finished", logkey.Changes, changes)
	var m struct {
		Changes []policy.RunChange `json:"changes"`
	}
	if err := json.Unmarshal(js.Bytes(), &m); err != nil || !cmp.Equal(m.Changes, changes) {
		t.Errorf("JSON changes = %+v (%v), want them whole:\n%s", m.Changes, err, js.String())
	}
}
