package report

import (
	"fmt"
	"io"

	"github.com/knue/syncjob/internal/policy"
)

// RunList prints runs one line each.
func RunList(w io.Writer, runs []policy.RunSummary) {
	t := &Table{}
	t.Add("TIME", "STATUS", "MODE", "TRIGGER", "ADDED", "UPDATED", "MOVED", "DELETED", "FAILED", "COMMIT", "RUN")
	for _, r := range runs {
		t.Add(r.Timestamp, r.Status, OrDash(r.Mode), OrDash(r.Trigger), fmt.Sprint(r.Added), fmt.Sprint(r.Updated),
			fmt.Sprint(r.Moved), fmt.Sprint(r.Deleted), fmt.Sprint(r.ErrorCount), OrDash(Short(r.CommitSHA)), r.RunID)
	}
	t.Write(w, "", Palette{})
	fmt.Fprintln(w, Count(len(runs), "run", "runs"))
}

// RunDetail prints one run: its summary as status shows the last run, then
// its changes.
func RunDetail(w io.Writer, r policy.RunSummary) {
	line := func(label, format string, args ...any) {
		fmt.Fprintf(w, "%-15s%s\n", label, Printable(fmt.Sprintf(format, args...)))
	}
	printRunSummary(line, "run", &r)
	if r.Repo != "" {
		line("repository", "%s, branch %s", r.Repo, r.Branch)
	}
	if len(r.Changes) == 0 {
		line("changes", "none")
		return
	}
	line("changes", "%s", Count(len(r.Changes)+r.ChangesOmitted, "change", "changes"))
	t := &Table{}
	t.Add("ACTION", "POLICY", "PATH", "OLD SHA", "NEW SHA")
	for _, c := range r.Changes {
		path := c.Path
		switch {
		case c.Action == policy.ActDelete:
			path = c.OldPath
		case c.OldPath != "" && c.OldPath != c.Path:
			path = c.OldPath + " -> " + c.Path
		}
		t.Add(c.Action.String(), c.PolicyName, path, OrDash(Short(c.OldSHA)), OrDash(Short(c.SHA)))
	}
	t.Write(w, "  ", Palette{})
	if r.ChangesOmitted > 0 {
		fmt.Fprintf(w, "  … and %d more (the history keeps the first %d)\n", r.ChangesOmitted, policy.MaxRunChanges)
	}
}
