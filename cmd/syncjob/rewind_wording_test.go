package main

import (
	"strings"
	"testing"
)

// TestSync_RewindRefusal_NotReportedAsTheMassDeleteGuard: a branch head
// reset behind the synced commit, or GITHUB_BRANCH naming another branch,
// is refused (exit 4) by the rewind check, whose way past is
// --allow-rewind; the run's first line, its recorded error and status
// --check name that check, not the mass-delete guard (whose way past,
// --allow-mass-delete, an adversarial helper found them pointing to).
func TestSync_RewindRefusal_NotReportedAsTheMassDeleteGuard(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		first := seed(w)
		w.sync(0)
		w.repo.Branch("stale")
		w.repo.Write("규정/제3편/새 규정.md", "# 새 규정\n")
		w.repo.Commit("main moves on")
		w.sync(0)

		for _, tc := range []struct {
			name string
			prep func()
		}{
			{"head behind", func() { w.repo.Reset(first) }},
			{"other branch", func() { w.env["GITHUB_BRANCH"] = "stale" }},
		} {
			tc.prep()
			r := w.run("sync")
			first := strings.SplitN(r.stdout, "\n", 2)[0]
			t.Logf("%s: exit %d: %s", tc.name, r.code, first)
			if r.code != exitRefused {
				t.Fatalf("%s: exit %d, want %d\n%s%s", tc.name, r.code, exitRefused, r.stdout, r.stderr)
			}
			if strings.Contains(first, "mass-delete guard") {
				t.Errorf("%s: the refusal is reported as the mass-delete guard's: %q", tc.name, first)
			}
			if lr := w.state().lastRun; lr != nil && strings.Contains(lr.Error, "mass-delete guard") {
				t.Errorf("%s: lastRun.error records it as the mass-delete guard's: %q", tc.name, lr.Error)
			}
			s := w.run("status", "--check")
			if strings.Contains(s.stdout, "refused: refused") {
				t.Errorf("%s: status --check says it twice: %q", tc.name, strings.TrimSpace(s.stdout))
			}
			if strings.Contains(s.stdout, "mass-delete guard") {
				t.Errorf("%s: status --check: %q", tc.name, strings.TrimSpace(s.stdout))
			}
		}
	})
}
