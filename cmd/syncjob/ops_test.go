package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/registry"
)

// deadLetterWorld syncs w, then makes two policies unreadable for three runs
// so that they become dead letters.
func deadLetterWorld(t *testing.T, w *world) {
	t.Helper()
	seed(w)
	w.sync(0)
	w.repo.Write("규정/제1편/학칙.md", "# 한국교원대학교 학칙 (개정)\n")
	w.repo.Write("규정/제1편/대학원 학칙.md", "# 대학원 학칙 (개정)\n")
	head := w.repo.Commit("two edits")
	for _, p := range []string{"규정/제1편/학칙.md", "규정/제1편/대학원 학칙.md"} {
		w.gh.FailWithin(githubtest.KindBlob, w.repo.BlobSHA(head, p), githubtest.ServerError(502))
	}
	// Each run also reads a file that can be read: a run in which every
	// read fails is an outage, which counts no failure.
	for i := range 3 {
		w.repo.Write("규정/제2편/연구소 설치(운영)․규정.md", fmt.Sprintf("# 연구소 설치․운영 규정 %d\n", i))
		w.repo.Commit("another edit")
		w.sync(exitPartial)
	}
	w.gh.ClearFaults()
}

func TestOps_StatusAfterDeadLetter(t *testing.T) {
	forEachBackend(t, func(t *testing.T, w *world) {
		deadLetterWorld(t, w)
		r := w.run("status")
		if r.code != 0 {
			t.Fatalf("status: exit %d\n%s", r.code, r.stderr)
		}
		t.Logf("$ syncjob status\n%s", r.stdout)
		for _, want := range []string{"PARTIAL", "dead letters   2", "학칙", "502", "queue          ", "last success", "recent runs"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("status lacks %q:\n%s", want, r.stdout)
			}
		}
		r = w.run("status", "--json")
		if !strings.Contains(r.stdout, `"deadLetters": [`) || !strings.Contains(r.stdout, `"retryCount": 3`) {
			t.Errorf("status --json:\n%s", r.stdout)
		}
		// Later runs leave the dead letters alone: nothing to do.
		if s := w.sync(0); !strings.Contains(s.stdout, "unchanged mode") {
			t.Errorf("run after dead letters:\n%s", s.stdout)
		}
	})
}

func TestOps_DeadLetterRetryLands_DropAsksOnTerminal(t *testing.T) {
	forEachBackend(t, func(t *testing.T, w *world) {
		deadLetterWorld(t, w)
		r := w.run("deadletter", "list")
		if r.code != 0 || !strings.Contains(r.stdout, "2 dead letters") {
			t.Fatalf("deadletter list: %d\n%s", r.code, r.stdout)
		}
		if r := w.run("deadletter", "retry", "학칙"); r.code != 0 {
			t.Fatalf("retry: %d %s", r.code, r.stderr)
		}
		if r := w.run("deadletter", "retry", "없는것"); r.code != exitFailed || !strings.Contains(r.stderr, "no dead letter") {
			t.Errorf("retry of an unknown name: %d %s", r.code, r.stderr)
		}
		w.sync(0)
		s := w.state()
		if s.policies["학칙"].Title != "한국교원대학교 학칙 (개정)" {
			t.Errorf("retried dead letter did not land: %+v", s.policies["학칙"])
		}
		if s.policies["대학원 학칙"].Title == "대학원 학칙 (개정)" {
			t.Error("the other dead letter was retried without being asked")
		}

		// drop: on a terminal it asks, and "n" keeps it.
		w.stdin, w.stdinTerminal = strings.NewReader("n\n"), true
		if r := w.run("deadletter", "drop", "대학원 학칙"); r.code != exitFailed || !strings.Contains(r.stderr, "[y/N]") {
			t.Errorf("drop answered no: %d %s", r.code, r.stderr)
		}
		w.stdin = strings.NewReader("y\n")
		if r := w.run("deadletter", "drop", "대학원 학칙"); r.code != 0 {
			t.Errorf("drop answered yes: %d %s", r.code, r.stderr)
		}
		if r := w.run("deadletter", "list"); !strings.Contains(r.stdout, "0 dead letters") {
			t.Errorf("after drop:\n%s", r.stdout)
		}
		r = w.run("queue", "list")
		if r.code != 0 || !strings.Contains(r.stdout, "학칙") {
			t.Errorf("queue list: %d\n%s", r.code, r.stdout)
		}
		if r := w.run("deadletter"); r.code != exitUsage {
			t.Errorf("deadletter without a subcommand: exit %d", r.code)
		}
	})
}

func TestOps_UnreadableDeadLetter_CanBeDropped(t *testing.T) {
	w := newWorld(t)
	seed(w)
	w.sync(0)
	reg := w.open()
	if errs := reg.Store().Put(t.Context(), []registry.Pair{{Key: "dead-letter:고장", Value: []byte("not json")}}); len(errs) > 0 {
		t.Fatal(errs)
	}
	_ = reg.Store().Close()
	if r := w.run("deadletter", "retry", "고장"); r.code != exitFailed || !strings.Contains(r.stderr, "unreadable") {
		t.Errorf("retry of an unreadable dead letter: %d %s", r.code, r.stderr)
	}
	if r := w.run("deadletter", "drop", "고장"); r.code != 0 {
		t.Fatalf("drop: %d %s", r.code, r.stderr)
	}
	for _, k := range w.state().keys {
		if k == "dead-letter:고장" {
			t.Error("the unreadable dead letter is still there")
		}
	}
}
