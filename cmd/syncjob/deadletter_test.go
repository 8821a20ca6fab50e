package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

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

func TestOps_DeadLetterRetryLands_DropAsksOnTerminal(t *testing.T) {
	t.Parallel()
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
		// the other dead letter still holds its version back: partial
		w.sync(exitPartial)
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

// unreadableDeadLetterWorld is a synced world whose registry holds a dead
// letter, 고장, that does not decode.
func unreadableDeadLetterWorld(t *testing.T) *world {
	t.Helper()
	w := newWorld(t)
	seed(w)
	w.sync(0)
	s := w.store()
	if errs := s.Put(t.Context(), []registry.Pair{{Key: "dead-letter:고장", Value: []byte("not json")}}); len(errs) > 0 {
		t.Fatal(errs)
	}
	_ = s.Close()
	return w
}

func TestOps_UnreadableDeadLetter_CanBeDropped(t *testing.T) {
	t.Parallel()
	w := unreadableDeadLetterWorld(t)
	if r := w.run("deadletter", "retry", "고장"); r.code != exitFailed || !strings.Contains(r.stderr, "unreadable") {
		t.Errorf("retry of an unreadable dead letter: %d %s", r.code, r.stderr)
	}
	if r := w.run("deadletter", "drop", "고장", "--yes"); r.code != 0 {
		t.Fatalf("drop: %d %s", r.code, r.stderr)
	}
	for _, k := range w.state().keys {
		if k == "dead-letter:고장" {
			t.Error("the unreadable dead letter is still there")
		}
	}
}

func TestDeadLetter_Drop_NotOnATerminal_NeedsYes(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	deadLetterWorld(t, w)
	w.stdin = strings.NewReader("y\n") // as from a pipe or </dev/null: nobody answers
	r := w.run("deadletter", "drop", "학칙")
	if r.code != exitUsage || !strings.Contains(r.stderr, "add --yes") {
		t.Errorf("drop without a terminal or --yes: exit %d, stderr %q; want 2 asking for --yes", r.code, r.stderr)
	}
	if r := w.run("deadletter", "list"); !strings.Contains(r.stdout, "2 dead letters") {
		t.Errorf("a drop nobody confirmed dropped:\n%s", r.stdout)
	}
}

func TestDeadLetter_Drop_SaysWhatTheRegistryKeeps(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	deadLetterWorld(t, w)
	kept := w.state().policies["학칙"]
	w.stdin, w.stdinTerminal = strings.NewReader("n\n"), true
	stays := "the registry keeps 학칙 at its current version (" + kept.SHA[:7] + ", 규정/제1편/학칙.md) until the next run, which plans it from the head again"
	if r := w.run("deadletter", "drop", "학칙"); !strings.Contains(r.stderr, stays) {
		t.Errorf("the question does not say what stays:\n%s", r.stderr)
	}
	r := w.run("deadletter", "drop", "--yes", "학칙")
	if r.code != exitOK || r.stdout != "dropped the dead letter of 학칙; "+stays+"\n" {
		t.Errorf("drop --yes: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := w.state().policies["학칙"]; got.SHA != kept.SHA {
		t.Errorf("the registry entry changed: %+v", got)
	}
}

func TestDeadLetter_RetryAll_ReleasesEveryOne(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		deadLetterWorld(t, w)
		r := w.run("deadletter", "retry", "--all")
		if r.code != exitOK || r.stdout != "2 dead letters back in the queue; the next sync retries them: 대학원 학칙, 학칙\n" {
			t.Fatalf("retry --all: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		if r := w.run("deadletter", "list"); !strings.Contains(r.stdout, "0 dead letters") {
			t.Errorf("after retry --all:\n%s", r.stdout)
		}
		w.sync(0)
		titles := w.state().titles()
		if titles["학칙"] != "한국교원대학교 학칙 (개정)" || titles["대학원 학칙"] != "대학원 학칙 (개정)" {
			t.Errorf("the retried versions did not land: %v", titles)
		}
		if r := w.run("status", "--check"); r.code != exitOK {
			t.Errorf("status --check after the retries landed: exit %d\n%s", r.code, r.stdout)
		}
	})
}

func TestDeadLetter_RetryAll_NamesTheUnreadable(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	deadLetterWorld(t, w)
	s := w.store()
	if errs := s.Put(t.Context(), []registry.Pair{{Key: "dead-letter:고장", Value: []byte("not json")}}); len(errs) > 0 {
		t.Fatal(errs)
	}
	_ = s.Close()
	r := w.run("deadletter", "retry", "--all")
	if r.code != exitFailed || !strings.HasPrefix(r.stdout, "2 dead letters back in the queue") || !strings.Contains(r.stderr, "고장 is unreadable and cannot be retried (syncjob deadletter drop 고장 --yes)") {
		t.Errorf("retry --all with an unreadable one: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestDeadLetter_RetryAndDrop_RefusedWhileASyncRuns(t *testing.T) {
	t.Parallel()
	w := newCloudflareWorld(t)
	deadLetterWorld(t, w)
	reg := w.open()
	// each command moves the clock an hour: a lease that outlasts them
	if _, err := reg.TakeLease(t.Context(), nil, "lambda req-running", w.clock(), 10*time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"deadletter", "retry", "학칙"}, {"deadletter", "retry", "--all"}, {"deadletter", "drop", "학칙", "--yes"}} {
		if r := w.run(args...); r.code != exitFailed || !strings.Contains(r.stderr, "a sync is running (lease held by lambda req-running") {
			t.Errorf("%v during a sync: exit %d %q", args, r.code, r.stderr)
		}
	}
	if d, _ := reg.DeadLetters(t.Context()); len(d) != 2 {
		t.Errorf("dead letters changed during a sync: %v", d)
	}
	w.mu.Lock()
	w.now = w.now.Add(10 * time.Hour) // the lease has expired: its run is gone
	w.mu.Unlock()
	if r := w.run("deadletter", "retry", "학칙"); r.code != exitOK {
		t.Errorf("retry after the lease expired: exit %d %q", r.code, r.stderr)
	}
}
