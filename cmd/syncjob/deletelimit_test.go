package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/github/githubtest"
)

// thirty returns a world whose registry holds 30 policies and whose head
// deletes eleven of them: more than 10 and more than 20%, which the default
// limit refuses.
func thirty(t *testing.T) *world {
	t.Helper()
	w := newWorld(t)
	for i := range 30 {
		w.repo.Write(fmt.Sprintf("규정/규정 %02d.md", i), fmt.Sprintf("# 규정 %02d\n\n제%d조\n", i, i))
	}
	w.repo.Commit("thirty")
	w.sync(exitOK)
	for i := range 11 {
		w.repo.Remove(fmt.Sprintf("규정/규정 %02d.md", i))
	}
	w.repo.Commit("delete eleven")
	return w
}

func TestDeleteLimit_DefaultRefusesMoreThan10And20Percent(t *testing.T) {
	t.Parallel()
	w := thirty(t)
	r := w.sync(exitRefused)
	if want := "refused: mass-delete guard: the plan loses 11 of 30 policies (more than MAX_DELETE=10 and MAX_DELETE_PERCENT=20%); run with --allow-mass-delete=11 if that is meant; no policy written"; firstLine(r.stdout) != want {
		t.Errorf("first line %q\nwant %q", firstLine(r.stdout), want)
	}
	if n := len(w.state().policies); n != 30 {
		t.Errorf("%d policies after a refused run, want 30", n)
	}
}

func TestDeleteLimit_CountAndPercentSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		code int
	}{
		{map[string]string{"MAX_DELETE": "11"}, exitOK},           // 11 is not more than 11
		{map[string]string{"MAX_DELETE_PERCENT": "40%"}, exitOK},  // 36% is not more than 40%
		{map[string]string{"MAX_DELETE_PERCENT": " 37 "}, exitOK}, // without % too
	} {
		w := thirty(t) // a run let through deletes: a world each
		for k, v := range tc.env {
			w.env[k] = v
		}
		r := w.run("sync")
		if r.code != tc.code {
			t.Errorf("%v: exit %d, want %d\n%s%s", tc.env, r.code, tc.code, r.stdout, r.stderr)
		}
	}
	// A refused run writes nothing: the refusals share one world.
	w := thirty(t)
	w.env["MAX_DELETE"], w.env["MAX_DELETE_PERCENT"] = "10", "36"
	if r := w.run("sync"); r.code != exitRefused {
		t.Errorf("MAX_DELETE=10 MAX_DELETE_PERCENT=36: exit %d, want %d\n%s%s", r.code, exitRefused, r.stdout, r.stderr)
	}
	delete(w.env, "MAX_DELETE")
	delete(w.env, "MAX_DELETE_PERCENT")
	if r := w.run("sync", "--max-delete", "3", "--max-delete-percent", "5"); r.code != exitRefused || !strings.Contains(r.stdout, "more than MAX_DELETE=3 and MAX_DELETE_PERCENT=5%") {
		t.Errorf("flags: exit %d\n%s", r.code, r.stdout)
	}
}

func TestDeleteLimit_BadForms_Exit2(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ env, value, want string }{
		{"MAX_DELETE", "ten", `config: MAX_DELETE: "ten" is not a whole number`},
		{"MAX_DELETE", "-1", "config: MAX_DELETE: -1 is negative"},
		{"MAX_DELETE_PERCENT", "120", "config: MAX_DELETE_PERCENT: 120 is outside 0-100"},
		{"MAX_DELETE_PERCENT", "20%%", `config: MAX_DELETE_PERCENT: "20%" is not a whole number`},
		{"MAX_DELETE_PERCENT", "-5%", "config: MAX_DELETE_PERCENT: -5 is outside 0-100"},
	} {
		w := newWorld(t)
		w.env[tc.env] = tc.value
		r := w.run("sync")
		if r.code != exitUsage || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%s=%s: exit %d, stderr %q; want 2 and %q", tc.env, tc.value, r.code, r.stderr, tc.want)
		}
	}
}

func TestDeleteLimit_AllowMassDeleteN_OnlyThePlanReviewed(t *testing.T) {
	t.Parallel()
	w := thirty(t)
	r := w.sync(exitRefused, "--allow-mass-delete=12")
	if want := "refused: mass-delete guard: the plan deletes 11 policies, not the 12 that --allow-mass-delete=12 lets through: it is not the plan that was reviewed; no policy written"; firstLine(r.stdout) != want {
		t.Errorf("first line %q\nwant %q", firstLine(r.stdout), want)
	}
	if n := len(w.state().policies); n != 30 {
		t.Errorf("%d policies after a refused run, want 30", n)
	}
	w.sync(exitOK, "--allow-mass-delete=11")
	if n := len(w.state().policies); n != 19 {
		t.Errorf("%d policies after --allow-mass-delete=11, want 19", n)
	}
	w = thirty(t)
	w.sync(exitOK, "--allow-mass-delete") // alone: any plan, as before
	w = thirty(t)
	w.env["ALLOW_MASS_DELETE"] = "yes"
	w.sync(exitRefused, "--allow-mass-delete=5") // the flag wins, and pins
	if r := w.run("sync", "--allow-mass-delete=lots"); r.code != exitUsage || !strings.Contains(r.stderr, `-allow-mass-delete: "lots" is not a count of policies or a yes/no value`) {
		t.Errorf("--allow-mass-delete=lots: exit %d\n%s", r.code, r.stderr)
	}
}

func TestDeleteLimit_ExpectHead_RefusesAnotherHead(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	first := seed(w)
	w.repo.Write("규정/신규.md", "# 신규\n")
	head := w.repo.Commit("one more")
	r := w.sync(exitRefused, "--expect-head", first[:7])
	if want := fmt.Sprintf("refused: expected head: the branch head is %s, not %s: the plan reviewed there is not the plan now; no policy written", head, first[:7]); firstLine(r.stdout) != want {
		t.Errorf("first line %q\nwant %q", firstLine(r.stdout), want)
	}
	if n := len(w.state().policies); n != 0 {
		t.Errorf("a refused run wrote %d policies", n)
	}
	w.sync(exitOK, "--expect-head", strings.ToUpper(head[:10]))
	w.sync(exitOK, "--expect-head", head)
	if r := w.run("sync", "--expect-head", "main"); r.code != exitUsage || !strings.Contains(r.stderr, `-expect-head: "main" is not a commit sha (7 to 40 hex digits)`) {
		t.Errorf("--expect-head main: exit %d\n%s", r.code, r.stderr)
	}
}

func TestDeleteLimit_DetailedExitCode_DryRunPending(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.sync(exitPending, "--dry-run", "--detailed-exitcode")
	w.sync(exitOK, "--dry-run") // without the flag, as before
	w.sync(exitOK)
	w.sync(exitOK, "--dry-run", "--detailed-exitcode")
	w.repo.Write("규정/신규.md", "# 신규\n")
	w.repo.Commit("one more")
	w.sync(exitPending, "--dry-run", "--detailed-exitcode", "--json")
	if r := w.run("sync", "--detailed-exitcode"); r.code != exitUsage || !strings.Contains(r.stderr, "-detailed-exitcode goes with --dry-run") {
		t.Errorf("--detailed-exitcode alone: exit %d\n%s", r.code, r.stderr)
	}
	if r := w.run("--help"); !strings.Contains(r.stderr, "5 changes pending (sync --dry-run --detailed-exitcode only)") {
		t.Errorf("--help lacks exit code 5:\n%s", r.stderr)
	}
}

// A dry run records nothing, so dead letters holding versions back make it
// no partial run (exit 3: failures recorded): it exits 5 when its plan has
// changes, 0 when it has none or without --detailed-exitcode (review).
func TestDryRun_DetailedExitCode_DeadLettersHeldBack_StillFiveOrZero(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	deadLetterWorld(t, w)
	w.sync(exitOK, "--dry-run")
	w.repo.Write("규정/새 규정.md", "# 새 규정\n")
	w.repo.Commit("add")
	w.sync(exitPending, "--dry-run", "--detailed-exitcode")
	w.sync(exitOK, "--dry-run")
}

// A dry run that could not read a file it would write does not know its
// plan: it exits 3 naming the file, not 0 ("no changes" with
// --detailed-exitcode) when that file is the only change (review: the
// first version of the rule above cleared every partial).
func TestDryRun_UnreadFile_NotExitOK(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.sync(exitOK)
	p := "규정/제1편/학칙.md"
	w.repo.Write(p, "# 한국교원대학교 학칙 (개정)\n")
	head := w.repo.Commit("edit 학칙")
	w.gh.FailWithin(githubtest.KindBlob, w.repo.BlobSHA(head, p), githubtest.ServerError(502))
	for _, args := range [][]string{{"sync", "--dry-run", "--detailed-exitcode"}, {"sync", "--dry-run"}} {
		if r := w.run(args...); r.code != exitPartial {
			t.Errorf("%v with 학칙 (the only change) unreadable: exit %d, want %d\n%s", args, r.code, exitPartial, r.stdout)
		}
	}
}
