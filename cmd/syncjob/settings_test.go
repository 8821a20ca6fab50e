package main

import (
	"strings"
	"testing"
)

// emptied returns a world whose registry holds the three seed policies and
// whose head deletes them all: a plan the mass-delete guard refuses.
func emptied(t *testing.T) *world {
	t.Helper()
	w := newWorld(t)
	seed(w)
	w.sync(exitOK)
	w.repo.Remove("규정")
	w.repo.Commit("empty the tree")
	return w
}

func TestSettings_AllowMassDelete_UsualSpellingsAccepted(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"1", "true", "TRUE", "yes", "Yes", " on ", "t", "Y"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel() // each spelling deletes everything: a world each
			w := emptied(t)
			w.env["ALLOW_MASS_DELETE"] = v
			w.sync(exitOK)
			if n := len(w.state().policies); n != 0 {
				t.Errorf("ALLOW_MASS_DELETE=%q: %d policies left, want the mass delete let through", v, n)
			}
		})
	}
}

func TestSettings_AllowMassDelete_FalseSpellingsKeepTheGuard(t *testing.T) {
	t.Parallel()
	// A refused run writes no policy and keeps lastCommit, so one emptied
	// world serves every spelling: each run faces the same plan.
	w := emptied(t)
	for _, v := range []string{"0", "false", "No", "OFF", "f", "n", ""} {
		w.env["ALLOW_MASS_DELETE"] = v
		w.sync(exitRefused)
		if n := len(w.state().policies); n != 3 {
			t.Errorf("ALLOW_MASS_DELETE=%q: %d policies left, want the 3 the guard keeps", v, n)
		}
	}
}

func TestSettings_AllowMassDelete_OtherValues_Exit2NamingSettingAndForms(t *testing.T) {
	t.Parallel()
	w := emptied(t) // a value refused before the run opens anything: one world serves all
	for _, v := range []string{"maybe", "enable", "2", "tru"} {
		w.env["ALLOW_MASS_DELETE"] = v
		r := w.sync(exitUsage)
		for _, want := range []string{"ALLOW_MASS_DELETE", `"` + v + `"`, "1, true, t, yes, y, on or 0, false, f, no, n, off"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("ALLOW_MASS_DELETE=%q: stderr lacks %q:\n%s", v, want, r.stderr)
			}
		}
		if strings.Count(r.stderr, "\n") != 1 || r.stdout != "" {
			t.Errorf("ALLOW_MASS_DELETE=%q: want one line on stderr, nothing on stdout:\nstdout %q\nstderr %q", v, r.stdout, r.stderr)
		}
	}
}

func TestSettings_BooleanFlags_UsualSpellings(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.sync(exitOK)
	if r := w.run("list", "--json=yes"); r.code != exitOK || !strings.HasPrefix(r.stdout, "[") {
		t.Errorf("list --json=yes: exit %d, want JSON:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := w.run("list", "--json=OFF"); r.code != exitOK || !strings.Contains(r.stdout, "3 policies") {
		t.Errorf("list --json=OFF: exit %d, want the table:\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := w.run("status", "--check=sure")
	if want := `syncjob: status: -check: "sure" is not a yes/no value: 1, true, t, yes, y, on or 0, false, f, no, n, off (any case); see syncjob status --help` + "\n"; r.code != exitUsage || r.stderr != want {
		t.Errorf("status --check=sure: exit %d, stderr %q; want 2 and %q", r.code, r.stderr, want)
	}
}

func TestCLI_ExtraArguments_Exit2(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.sync(exitOK)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"deadletter", "retry", "Foo", "Bar"}, `syncjob: deadletter retry: takes one NAME, got 2 words; quote a name with spaces: syncjob deadletter retry "Foo Bar"; see syncjob deadletter retry --help`},
		{[]string{"deadletter", "drop", "대학원", "학칙", "--yes"}, `syncjob: deadletter drop: takes one NAME, got 2 words; quote a name with spaces: syncjob deadletter drop "대학원 학칙"; see syncjob deadletter drop --help`},
		{[]string{"deadletter", "drop", "--yes", "대학원", "학칙"}, `syncjob: deadletter drop: takes one NAME, got 2 words; quote a name with spaces: syncjob deadletter drop "대학원 학칙"; see syncjob deadletter drop --help`},
		{[]string{"deadletter", "retry", "--all", "extra"}, "syncjob: deadletter retry: needs the NAME of a dead letter, or --all (syncjob deadletter list); see syncjob deadletter retry --help"},
		{[]string{"status", "--runs", "-3"}, "syncjob: status: -runs: -3 is negative; give how many recent runs to show (0 or more); see syncjob status --help"},
		{[]string{"status", "now"}, `syncjob: status: unexpected argument "now"; see syncjob status --help`},
		{[]string{"sync", "--dry-run", "main"}, `syncjob: sync: unexpected argument "main"; see syncjob sync --help`},
		{[]string{"queue", "list", "all"}, `syncjob: queue list: unexpected argument "all"; see syncjob queue list --help`},
		{[]string{"deadletter", "list", "x"}, `syncjob: deadletter list: unexpected argument "x"; see syncjob deadletter list --help`},
		{[]string{"lease", "show", "x"}, `syncjob: lease show: unexpected argument "x"; see syncjob lease show --help`},
		{[]string{"lease", "release", "x"}, `syncjob: lease release: unexpected argument "x"; see syncjob lease release --help`},
		{[]string{"version", "x"}, `syncjob: version: unexpected argument "x"; see syncjob version --help`},
		{[]string{"webhook", "verify", "x"}, `syncjob: webhook verify: unexpected argument "x"; see syncjob webhook verify --help`},
	} {
		r := w.run(tc.args...)
		if r.code != exitUsage || r.stderr != tc.want+"\n" {
			t.Errorf("syncjob %s: exit %d, stderr %q\nwant exit 2 and %q", strings.Join(tc.args, " "), r.code, r.stderr, tc.want)
		}
	}
}
