package main

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/policy"
)

// updateMoveDelete syncs the seed, then a commit that updates, moves and
// deletes one policy each, and returns the second run's summary line.
func updateMoveDelete(t *testing.T, w *world) map[string]any {
	t.Helper()
	seed(w)
	w.sync(0)
	w.repo.Write("규정/제1편/학칙.md", "# 한국교원대학교 학칙 (개정)\n")
	w.repo.Move("규정/제2편/연구소 설치(운영)․규정.md", "규정/제3편/연구소 설치(운영)․규정.md")
	w.repo.Remove("규정/제1편/대학원 학칙.md")
	w.repo.Commit("update, move, delete")
	return w.sync(0, "--allow-mass-delete").summaryLine(t)
}

// runIDs matches the run ids and timings that differ between runs of a test.
var runIDs = regexp.MustCompile(`run-[0-9a-z-]+|[0-9a-f]{7,40}|\d+ms|\d+(\.\d+)?s\b`)

func TestRuns_ShowNamesWhatARunUpdatedMovedDeleted_Golden(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		line := updateMoveDelete(t, w)
		// the summary line names the changes
		raw, _ := json.Marshal(line["changes"])
		var changes []policy.RunChange
		if err := json.Unmarshal(raw, &changes); err != nil {
			t.Fatalf("summary line's changes: %v\n%s", err, raw)
		}
		for i := range changes {
			if changes[i].OldSHA == "" || (changes[i].SHA == "") != (changes[i].Action == policy.ActDelete) {
				t.Errorf("change %d: shas %q -> %q", i, changes[i].OldSHA, changes[i].SHA)
			}
			changes[i].SHA, changes[i].OldSHA = "", ""
		}
		want := []policy.RunChange{
			{Action: policy.ActMove, PolicyName: "연구소 설치(운영)․규정", Path: "규정/제3편/연구소 설치(운영)․규정.md", OldPath: "규정/제2편/연구소 설치(운영)․규정.md"},
			{Action: policy.ActUpdate, PolicyName: "학칙", Path: "규정/제1편/학칙.md", OldPath: "규정/제1편/학칙.md"},
			{Action: policy.ActDelete, PolicyName: "대학원 학칙", OldPath: "규정/제1편/대학원 학칙.md"},
		}
		if diff := cmp.Diff(want, changes); diff != "" {
			t.Errorf("summary line's changes (-want +got):\n%s", diff)
		}
		// lastRun and the history record them
		s := w.state()
		if len(s.lastRun.Changes) != 3 || s.lastRun.ChangesOmitted != 0 {
			t.Errorf("lastRun changes: %+v", s.lastRun.Changes)
		}
		list := w.run("runs")
		if list.code != 0 || strings.Count(list.stdout, "\n") != 4 || !strings.Contains(list.stdout, s.lastRun.RunID) {
			t.Fatalf("runs: exit %d\n%s%s", list.code, list.stdout, list.stderr)
		}
		show := w.run("runs", "show", s.lastRun.RunID)
		if show.code != 0 {
			t.Fatalf("runs show: exit %d\n%s", show.code, show.stderr)
		}
		got := "$ syncjob runs\n" + list.stdout + "\n$ syncjob runs show RUN\n" + show.stdout
		t.Logf("\n%s", got)
		got = runIDs.ReplaceAllString(got, "…")
		const path = "testdata/runs.golden"
		if *update && w.cf == nil {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		golden, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -run Golden -update writes it)", err)
		}
		if diff := cmp.Diff(string(golden), got); diff != "" {
			t.Errorf("runs (-%s +got):\n%s", path, diff)
		}
		var js policy.RunSummary
		if r := w.run("runs", "show", s.lastRun.RunID, "--json"); json.Unmarshal([]byte(r.stdout), &js) != nil || len(js.Changes) != 3 {
			t.Errorf("runs show --json:\n%s", r.stdout)
		}
		if r := w.run("runs", "show", "no-such-run"); r.code != exitFailed || !strings.Contains(r.stderr, "no run no-such-run in the run history") {
			t.Errorf("runs show of an unknown run: exit %d\n%s", r.code, r.stderr)
		}
	})
}

func TestRuns_ChangesBoundedWithACount(t *testing.T) {
	t.Parallel()
	var p policy.Plan
	for i := range 250 {
		p.Items = append(p.Items, policy.Item{Action: policy.ActAdd, PolicyName: strings.Repeat("x", i+1)})
	}
	p.Items = append(p.Items, policy.Item{Action: policy.ActMigrate, PolicyName: "legacy"})
	changes, omitted := p.RunChanges()
	if len(changes) != policy.MaxRunChanges || omitted != 150 {
		t.Errorf("RunChanges: %d listed, %d omitted; want %d and 150", len(changes), omitted, policy.MaxRunChanges)
	}
}
