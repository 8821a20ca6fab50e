package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/github/githubtest"
)

func TestSync_GitHubOutage_KeepsLastFullRun_NextRunNotFull(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		seed(w)
		w.sync(0)
		full := w.state().lastRun
		if full.LastFullRun == "" || full.LastSuccess == "" {
			t.Fatalf("first run: lastFullRun %q, lastSuccess %q", full.LastFullRun, full.LastSuccess)
		}
		w.gh.FailNext(githubtest.AnyKind, 10, githubtest.ServerError(http.StatusBadGateway))
		w.sync(exitFailed)
		w.gh.ClearFaults()
		failed := w.state().lastRun
		if failed.Status != "failed" || failed.LastFullRun != full.LastFullRun || failed.LastSuccess != full.LastSuccess {
			t.Errorf("after a GitHub outage: status %s, lastFullRun %q (want %q), lastSuccess %q (want %q)", failed.Status, failed.LastFullRun, full.LastFullRun, failed.LastSuccess, full.LastSuccess)
		}
		w.repo.Write("규정/제3편/신규규정.md", "# 신규 규정\n")
		w.repo.Commit("add")
		if r := w.sync(0); r.summaryLine(t)["mode"] == "full" {
			t.Errorf("the run after an outage is full:\n%s", r.stdout)
		}
	})
}

func TestSync_GuardRefusal_RecordedAsRefusedNotAFailedPolicy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.sync(0)
	w.repo.Remove("규정")
	w.repo.Commit("empty the tree")
	w.sync(exitRefused)
	last := w.state().lastRun
	if last.Status != "refused" || last.ErrorCount != 0 || !strings.Contains(last.Error, "mass-delete") {
		t.Errorf("lastRun of a refused run: status %q, errorCount %d, error %q", last.Status, last.ErrorCount, last.Error)
	}
	if r := w.run("status"); !strings.Contains(r.stdout, "REFUSED") || !strings.Contains(r.stdout, "0 failed") {
		t.Errorf("status after a refusal:\n%s", r.stdout)
	}
}
