package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/syncer"
)

// commands are every command and subcommand, as typed.
var commands = [][]string{
	{"sync"}, {"list"}, {"status"}, {"runs"}, {"runs", "show"}, {"queue"}, {"queue", "list"},
	{"deadletter"}, {"deadletter", "list"}, {"deadletter", "retry"}, {"deadletter", "drop"},
	{"lease"}, {"lease", "show"}, {"lease", "release"}, {"version"},
}

func TestCLI_HelpOnEveryCommand_Exit0(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for _, cmd := range commands {
		for _, args := range [][]string{append(cmd[:len(cmd):len(cmd)], "--help"), append([]string{"help"}, cmd...)} {
			r := w.run(args...)
			if r.code != exitOK || !strings.Contains(r.stderr, "Usage: syncjob "+cmd[0]) {
				t.Errorf("syncjob %s: exit %d, want 0 and its usage:\n%s", strings.Join(args, " "), r.code, r.stderr)
			}
		}
	}
	if r := w.run("deadletter", "retry", "학칙", "--help"); r.code != exitOK {
		t.Errorf("deadletter retry NAME --help: exit %d", r.code)
	}
}

func TestCLI_Help_ListsOnlyTheSettingsACommandReads(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for _, cmd := range commands {
		r := w.run(append(cmd[:len(cmd):len(cmd)], "--help")...)
		name := strings.Join(cmd, " ")
		var want, not []string
		switch name {
		case "sync":
			want, not = []string{"GITHUB_REPO", "GITHUB_TOKEN", "REGISTRY_PATH", "BATCH_SIZE", "RECONCILE_INTERVAL", "LOG_LEVEL"}, []string{"STATUS_MAX_AGE"}
		case "status":
			want, not = []string{"REGISTRY_PATH", "CLOUDFLARE_API_TOKEN", "LOG_LEVEL", "STATUS_MAX_AGE"}, []string{"GITHUB_TOKEN", "GITHUB_API_URL", "BATCH_SIZE", "RECONCILE_INTERVAL", "(required)"}
		case "queue", "deadletter", "lease", "version":
			not = []string{"GITHUB_", "REGISTRY_PATH", "BATCH_SIZE"}
		default: // list and the subcommands
			want, not = []string{"REGISTRY_PATH", "CLOUDFLARE_ACCOUNT_ID", "LOG_FORMAT"}, []string{"GITHUB_", "-repo", "BATCH_SIZE", "MAX_FILE_SIZE", "STATUS_MAX_AGE"}
		}
		for _, s := range want {
			if !strings.Contains(r.stderr, s) {
				t.Errorf("%s --help lacks %s:\n%s", name, s, r.stderr)
			}
		}
		for _, s := range not {
			if strings.Contains(r.stderr, s) {
				t.Errorf("%s --help lists %s, which it does not read:\n%s", name, s, r.stderr)
			}
		}
	}
}

func TestCLI_Help_ShowsEachFlagsKindNotValue(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := w.run("sync", "--help")
	for _, want := range []string{"-repo owner/name\n", "-reconcile-interval duration\n", "-batch-size int\n", "-github-api-url URL\n", "-log-level debug|info|warn|error\n", "-full\n"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("sync --help lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, " value\n") {
		t.Errorf("sync --help shows a flag's kind as value:\n%s", r.stderr)
	}
	if r := w.run("status", "--help"); !strings.Contains(r.stderr, "-runs int\n") || !strings.Contains(r.stderr, "(default 10)") {
		t.Errorf("status --help:\n%s", r.stderr)
	}
}

func TestCLI_UsageMistakes_OneShortLine(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "--bogus"}, "syncjob: list: unknown flag -bogus; see syncjob list --help"},
		{[]string{"sync", "--no-such-flag"}, "syncjob: sync: unknown flag -no-such-flag; see syncjob sync --help"},
		{[]string{"status", "--runs", "x"}, `syncjob: status: -runs: "x" is not a whole number; see syncjob status --help`},
		{[]string{"list", "extra"}, `syncjob: list: unexpected argument "extra"; see syncjob list --help`},
		{[]string{"queue"}, "syncjob: queue: needs one of: list; see syncjob queue --help"},
		{[]string{"deadletter", "frob"}, `syncjob: deadletter: unknown subcommand "frob" (one of: drop, list, retry); see syncjob deadletter --help`},
		{[]string{"deadletter", "retry"}, "syncjob: deadletter retry: needs the NAME of a dead letter, or --all (syncjob deadletter list); see syncjob deadletter retry --help"},
		{[]string{"frobnicate"}, `syncjob: unknown command "frobnicate"; see syncjob --help`},
	} {
		r := w.run(tc.args...)
		if r.code != exitUsage || r.stderr != tc.want+"\n" || r.stdout != "" {
			t.Errorf("syncjob %s: exit %d\nstdout %q\nstderr %q\nwant exit 2 and stderr %q", strings.Join(tc.args, " "), r.code, r.stdout, r.stderr, tc.want)
		}
	}
}

func TestCLI_BadValues_SayTheExpectedForm(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ env, value, want string }{
		{"RECONCILE_INTERVAL", "7d", `RECONCILE_INTERVAL: "7d" is not a duration such as 24h or 30m`},
		{"BATCH_SIZE", "many", `BATCH_SIZE: "many" is not a whole number`},
		{"MAX_FILE_SIZE", "1MB", `MAX_FILE_SIZE: "1MB" is not a whole number`},
	} {
		w := newWorld(t)
		w.env[tc.env] = tc.value
		r := w.run("sync")
		if r.code != exitUsage || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%s=%s: exit %d, stderr %q; want 2 and one line saying %q", tc.env, tc.value, r.code, r.stderr, tc.want)
		}
	}
}

func TestCLI_ReadCommands_IgnoreSyncSettings(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.sync(0)
	w.env["GITHUB_REPO"] = "not a repo"
	w.env["BATCH_SIZE"] = "many"
	w.env["RECONCILE_INTERVAL"] = "7d"
	for _, args := range [][]string{{"list"}, {"queue", "list"}, {"deadletter", "list"}, {"lease", "show"}} {
		if r := w.run(args...); r.code != exitOK {
			t.Errorf("%v with bad sync settings: exit %d\n%s", args, r.code, r.stderr)
		}
	}
}

func TestCLI_Version_ModuleAndRevision(t *testing.T) {
	t.Parallel()
	run := func(info *debug.BuildInfo) (int, string) {
		var out, errb strings.Builder
		code := runWith(context.Background(), []string{"version"}, func(string) string { return "" }, &out, &errb,
			deps{buildInfo: func() (*debug.BuildInfo, bool) { return info, info != nil }})
		return code, out.String()
	}
	code, out := run(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/knue/syncjob", Version: "v1.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "7035f5c0ffee"}, {Key: "vcs.time", Value: "2026-11-25T16:00:00Z"}, {Key: "vcs.modified", Value: "true"}}})
	if want := "syncjob v1.4.0 (revision 7035f5c0ffee, 2026-11-25T16:00:00Z, modified; go1.26.8)\n"; code != exitOK || out != want {
		t.Errorf("version: exit %d, %q; want %q", code, out, want)
	}
	code, out = run(&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}})
	if code != exitOK || !strings.Contains(out, "syncjob (devel) (revision unknown (built without VCS information); "+runtime.Version()+")") {
		t.Errorf("version without VCS: exit %d, %q", code, out)
	}
	var out2 strings.Builder
	if code := runWith(context.Background(), []string{"--version"}, func(string) string { return "" }, &out2, &strings.Builder{}, deps{}); code != exitOK || !strings.HasPrefix(out2.String(), "syncjob ") {
		t.Errorf("--version: exit %d, %q", code, out2.String())
	}
}

// TestHelp_LeaseTimesAreTheCodes: "lease --help" and docs/design.md (the
// one page that describes the lease; infra/README.md points there) state
// the lease times the runs use (syncer.DefaultLeaseTTL, renewed every
// third of it).
func TestHelp_LeaseTimesAreTheCodes(t *testing.T) {
	t.Parallel()
	renew, expire := fmt.Sprintf("every %d minutes", syncer.DefaultLeaseTTL/3/time.Minute), fmt.Sprintf("%d minutes after the last renewal", syncer.DefaultLeaseTTL/time.Minute)
	w := newWorld(t)
	r := w.run("lease", "--help")
	help := strings.Join(strings.Fields(r.stdout+r.stderr), " ")
	if !strings.Contains(help, "renews it "+renew) || !strings.Contains(help, "expires by itself "+expire) {
		t.Errorf("lease --help does not say %q and %q:\n%s%s", renew, expire, r.stdout, r.stderr)
	}
	readme, err := os.ReadFile("../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(readme)), " ")
	if !strings.Contains(text, "renewed "+renew) || !strings.Contains(text, "expiring "+expire) {
		t.Errorf("docs/design.md does not say the lease is renewed %q and expires %q", renew, expire)
	}
}
