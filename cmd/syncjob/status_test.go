package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

func TestOps_StatusAfterDeadLetter(t *testing.T) {
	t.Parallel()
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
		// Later runs leave the dead letters alone, and say what they hold
		// back: partial, naming both.
		if s := w.sync(exitPartial); !strings.Contains(s.stdout, "unchanged mode") || !strings.Contains(s.stdout, "2 held back") || !strings.Contains(s.stdout, "대학원 학칙") {
			t.Errorf("run after dead letters:\n%s", s.stdout)
		}
	})
}

func TestStatus_SaysWhichRegistryRepositoryAndLease(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		seed(w)
		w.sync(0)
		r := w.run("status")
		want := []string{"repository     knue/policies, branch main\n", "lease          none\n"}
		if w.cf == nil {
			want = append(want, "registry       file "+w.db+", 3 policies\n")
		} else {
			want = append(want, "registry       Cloudflare Workers KV, account "+cfAccountID+", namespace "+cfNamespaceID+", 3 policies\n")
		}
		for _, s := range want {
			if !strings.Contains(r.stdout, s) {
				t.Errorf("status lacks %q:\n%s", s, r.stdout)
			}
		}
		// A lease is shown with its holder; one a crashed run left says it
		// has expired.
		for _, tc := range []struct {
			taken time.Time
			want  string
		}{
			{w.clock(), `lease +held by lambda req-running since 2026-11-25T18:00:00Z, until 2026-11-25T18:06:00Z\n`},
			{w.clock().Add(-10 * time.Minute), `lease +expired, left by lambda req-running \(taken 2026-11-25T17:50:00Z, until 2026-11-25T17:56:00Z\)`},
		} {
			reg := w.open()
			held := w.cf == nil && tc.taken.Equal(w.clock())
			if held {
				// on the file a lease is held while its run holds the file;
				// without one its run is gone (TestStatus_Bolt_LeaseOfAKilledRun_UnhealthyAtOnce)
				_ = reg.Close()
				running, err := registry.OpenBolt(w.db, w.clock)
				if err != nil {
					t.Fatal(err)
				}
				reg = registry.New(running)
			}
			if _, err := reg.TakeLease(t.Context(), nil, "lambda req-running", tc.taken, 6*time.Minute); err != nil {
				t.Fatal(err)
			}
			if !held {
				_ = reg.Close()
			}
			r = w.run("status")
			if held {
				_ = reg.Close()
			}
			if !regexp.MustCompile(tc.want).MatchString(r.stdout) {
				t.Errorf("status does not show the lease as %s:\n%s%s", tc.want, r.stdout, r.stderr)
			}
		}
	})
}

func TestStatus_Check_HealthyExit0(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.sync(0)
	r := w.run("status", "--check")
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "healthy: ") {
		t.Errorf("status --check after a success: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestStatus_Check_UnhealthyExit1WithTheReason(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		prepare func(w *world)
		reason  string
	}{
		{"last run failed", func(w *world) {
			w.gh.FailNext(githubtest.AnyKind, -1, githubtest.ServerError(502))
			w.sync(exitFailed)
		}, "the last run (2026-11-25T17:00:00Z) is failed: github: get head"},
		{"last success too old", func(w *world) {
			w.now = w.now.Add(26 * time.Hour)
		}, "(STATUS_MAX_AGE)"},
		{"dead letters", func(w *world) {
			deadLetterWorld(w.t.(*testing.T), w)
			w.sync(exitPartial) // partial while they hold versions back
		}, "2 dead letters hold back versions: 대학원 학칙, 학칙 (syncjob deadletter list)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			seed(w)
			w.sync(0)
			tc.prepare(w)
			r := w.run("status", "--check")
			if r.code != exitFailed || !strings.HasPrefix(r.stdout, "unhealthy: ") || !strings.Contains(r.stdout, tc.reason) {
				t.Errorf("status --check: exit %d\n%s%s\nwant exit 1 saying %q", r.code, r.stdout, r.stderr, tc.reason)
			}
			j := w.run("status", "--check", "--json")
			if j.code != exitFailed || !strings.Contains(j.stdout, `"healthy": false`) {
				t.Errorf("status --check --json: exit %d\n%s", j.code, j.stdout)
			}
		})
	}
	t.Run("a longer STATUS_MAX_AGE", func(t *testing.T) {
		w := newWorld(t)
		seed(w)
		w.sync(0)
		w.now = w.now.Add(30 * time.Hour)
		w.env["STATUS_MAX_AGE"] = "48h"
		if r := w.run("status", "--check"); r.code != exitOK {
			t.Errorf("status --check within STATUS_MAX_AGE: exit %d\n%s", r.code, r.stdout)
		}
	})
}

// status --check prints names and errors that come from files and
// services made printable, as every other status line is: a dead letter
// named with an escape sequence does not steer the terminal (review).
func TestStatus_Check_SteeringCharactersInANameEscaped(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.sync(0)
	name := "학칙\x1b[2J\x1b[1;1Hhealthy: all good\n"
	msg := "cloudflare: 502"
	now := w.clock().Format(policy.TimeLayout)
	d := policy.DeadLetter{QueueEntry: policy.QueueEntry{PolicyName: name, SHA: fmt.Sprintf("%040x", 7), Operation: "update", RetryCount: 3, CreatedAt: now, ErrorMessage: &msg}, DeadAt: now, Reason: "3 failed attempts"}
	st := w.store()
	if failed := st.Put(context.Background(), []registry.Pair{registry.DeadLetterPair(d)}); failed != nil {
		t.Fatal(failed)
	}
	if c, ok := st.(io.Closer); ok {
		c.Close()
	}
	r := w.run("status", "--check")
	if r.code != exitFailed || strings.ContainsAny(strings.TrimSuffix(r.stdout, "\n"), "\x1b\n") || !strings.Contains(r.stdout, `\u001b[2J`) {
		t.Errorf("status --check: exit %d, %q; want the name's escape shown as \\u001b, not sent", r.code, r.stdout)
	}
}

func TestStatus_WithoutGitHubSettings_NamesTheRepositoryTheLastRunRecorded(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.sync(0)
	delete(w.env, "GITHUB_REPO")
	delete(w.env, "GITHUB_BRANCH")
	if r := w.run("status"); r.code != exitOK || !strings.Contains(r.stdout, "repository     knue/policies, branch main") {
		t.Errorf("status without GITHUB_REPO: exit %d\n%s", r.code, r.stdout)
	}
}

// Settings that name another repository or branch than the last run synced
// do not relabel the registry: status names what it holds and says what the
// settings would sync instead.
func TestStatus_SettingsForAnotherRepository_NamesWhatTheRegistryHolds(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.sync(0)
	for _, tc := range []struct{ repo, branch string }{{"knue/website", "main"}, {"knue/policies", "draft"}} {
		w.env["GITHUB_REPO"], w.env["GITHUB_BRANCH"] = tc.repo, tc.branch
		r := w.run("status")
		want := []string{
			"repository     knue/policies, branch main\n",
			"settings       GITHUB_REPO and GITHUB_BRANCH name " + tc.repo + ", branch " + tc.branch + ": not what the last run synced; the next sync reads them\n",
		}
		for _, s := range want {
			if !strings.Contains(r.stdout, s) {
				t.Errorf("%s@%s: status lacks %q:\n%s", tc.repo, tc.branch, s, r.stdout)
			}
		}
		j := w.run("status", "--json")
		if !strings.Contains(j.stdout, `"repo": "knue/policies"`) || !strings.Contains(j.stdout, `"settingsRepo": "`+tc.repo+`"`) {
			t.Errorf("%s@%s: status --json:\n%s", tc.repo, tc.branch, j.stdout)
		}
	}
	// The same repository, spelt in another case, is the same repository.
	w.env["GITHUB_REPO"], w.env["GITHUB_BRANCH"] = "KNUE/Policies", "main"
	if r := w.run("status"); strings.Contains(r.stdout, "\nsettings ") {
		t.Errorf("status warns about the same repository:\n%s", r.stdout)
	}
}

// A first sync larger than DAILY_WRITE_BUDGET spreads over days: each run
// writes what fits, ends partial saying what waits, status shows the
// progress, and the run that writes the last policy ends in success.
func TestStatus_ShowsAFirstSyncSpreadOverDaysByTheWriteBudget(t *testing.T) {
	t.Parallel()
	w := newCloudflareWorld(t)
	seed(w)
	// Each run's own writes (lease taken and released, the record's three,
	// the two reservations of its writes) leave room for one policy and its
	// queue entry a day.
	w.env["DAILY_WRITE_BUDGET"] = "9"
	for day, written := range []int{1, 2} {
		r := w.sync(exitPartial)
		if !strings.Contains(r.stdout, "1 added") {
			t.Errorf("day %d: sync does not say it added one policy:\n%s", day+1, r.stdout)
		}
		if got := len(w.state().paths()); got != written {
			t.Errorf("day %d: %d policies in the registry, want %d", day+1, got, written)
		}
		st := w.run("status")
		want := fmt.Sprintf("waiting        %d changes wait for the daily write budget (DAILY_WRITE_BUDGET); %d policies written so far; the next run continues\n", 3-written, written)
		if !strings.Contains(st.stdout, want) {
			t.Errorf("day %d: status lacks %q:\n%s", day+1, want, st.stdout)
		}
		w.now = w.now.Add(24 * time.Hour)
	}
	r := w.sync(exitOK)
	if got := len(w.state().paths()); got != 3 {
		t.Errorf("day 3: %d policies in the registry, want 3\n%s", got, r.stdout)
	}
	if st := w.run("status"); strings.Contains(st.stdout, "\nwaiting ") {
		t.Errorf("status still shows waiting work after the last policy was written:\n%s", st.stdout)
	}
}

// A run whose record could not be written (here its lastRun key is
// refused) exits 1 and leaves a policy behind the head (its write refused
// too); lastRun is still the previous run's success. "status" says a run
// did not finish (its lease is left behind): "status --check" must not
// answer healthy, reading lastRun alone (review).
func TestStatus_Check_RunNotRecorded_Unhealthy(t *testing.T) {
	t.Parallel()
	w := newCloudflareWorld(t)
	seed(w)
	w.sync(exitOK)
	w.repo.Write("규정/제1편/학칙.md", "# 한국교원대학교 학칙\n\n제1조 목적 (개정)\n")
	w.repo.Commit("edit 학칙")
	w.cf.FailKeys(registry.PolicyKey("학칙"), registry.LastRunKey)
	r := w.sync(exitFailed)
	w.cf.FailKeys()
	if !strings.HasPrefix(r.stdout, "failed:") {
		t.Fatalf("the run: %s", r.stdout)
	}
	st := w.run("status")
	c := w.run("status", "--check")
	if c.code == exitOK {
		t.Errorf("status --check: exit 0, %q\nafter a run that failed and left 학칙 behind the head; status says:\n%s", c.stdout, st.stdout)
	}
}

// A run killed mid-apply leaves its lease (and a half-written
// registry) behind; "status" says "that run did not finish", and
// "status --check" must not answer healthy (review).
func TestStatus_Check_LeaseLeftByAKilledRun_Unhealthy(t *testing.T) {
	t.Parallel()
	w := newCloudflareWorld(t)
	seed(w)
	w.sync(exitOK)
	reg := w.open()
	if _, err := reg.TakeLease(t.Context(), nil, "lambda killed-request", w.clock(), registry.LeaseKeep/30/24/60); err != nil {
		t.Fatal(err)
	}
	w.run("status") // an hour passes: the lease has expired, unreleased
	st := w.run("status")
	if !strings.Contains(st.stdout, "did not finish") {
		t.Fatalf("status does not show the lease left behind:\n%s", st.stdout)
	}
	c := w.run("status", "--check")
	if c.code == exitOK {
		t.Errorf("status --check: exit 0, %q\nwhile status says:\n%s", c.stdout, st.stdout)
	}
}

// A run that succeeded but whose lease release did not land (the
// release is retried, then given up: "the next run plans from the head
// tree") exits 0, synced; "status" must not say of it "that run did not
// finish" (review).
func TestStatus_ReleaseLost_NotCalledARunThatDidNotFinish(t *testing.T) {
	t.Parallel()
	w := newCloudflareWorld(t)
	seed(w)
	w.watchCloudflare(func(r *http.Request) {
		if r.Body == nil || r.Method != http.MethodPut {
			return
		}
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		if bytes.Contains(b, []byte(registry.LastRunKey)) {
			w.cf.FailKeys(registry.LeaseKey) // from the record on, no lease write lands
		}
	})
	r := w.sync(exitOK)
	w.cf.FailKeys()
	if !strings.HasPrefix(r.stdout, "synced") {
		t.Fatalf("the run: %s", r.stdout)
	}
	st := w.run("status")
	if strings.Contains(st.stdout, "did not finish") {
		t.Errorf("status after a run that finished, synced, exit 0:\n%s", st.stdout)
	}
}
