package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/policy"
)

// writeSizes records the size of every Write (and has no WriteString that
// would bypass it).
type writeSizes struct {
	buf             bytes.Buffer
	largest, writes int
}

func (w *writeSizes) Write(p []byte) (int, error) {
	w.largest, w.writes = max(w.largest, len(p)), w.writes+1
	return w.buf.Write(p)
}

// A first sync of many policies prints a line per change; the report writes
// them as it goes, not as one text of every line built first
// (docs/bench.md, "How we got here", "Memory, third pass"), and still
// aligns the columns over all of them.
func TestRunWrite_LongPlanIsStreamed_NotBuiltWhole(t *testing.T) {
	t.Parallel()
	const n = 5000
	items := make([]policy.Item, n)
	for i := range items {
		items[i] = policy.Item{Action: policy.ActAdd, PolicyName: fmt.Sprintf("policy-%d", i), Path: fmt.Sprintf("policies/p%d.md", i), Title: "A title"}
	}
	items[n-1].PolicyName = "a-much-longer-name-at-the-very-end"
	r := Run{outcome: outcomeSynced, plan: policy.Plan{Items: items}}
	var w writeSizes
	r.Write(&w, false, Palette{})
	lines := strings.Split(strings.TrimSuffix(w.buf.String(), "\n"), "\n")
	if got := len(lines); got != n+2 { // the headline, a line per item, the plan's line
		t.Fatalf("%d lines, want %d", got, n+2)
	}
	if want := "  +  policy-0                            policies/p0.md     A title"; lines[1] != want {
		t.Errorf("first row %q, want %q (aligned with the longest name and path, at the end)", lines[1], want)
	}
	if w.buf.Len() < 4*(64<<10) {
		t.Fatalf("the report is %d bytes: too short to tell", w.buf.Len())
	}
	if w.largest > 64<<10 {
		t.Errorf("largest write %d bytes of %d in %d writes: the table was built whole before it was written", w.largest, w.buf.Len(), w.writes)
	}
}

// A first sync in windows holds its first changes only (policy.Plan's
// Omitted counts the rest): the report lists those, says how many more
// there are, and its plan line counts them all.
func TestRunWrite_PlanThatCountsMoreThanItHolds_SaysSo(t *testing.T) {
	t.Parallel()
	items := []policy.Item{{Action: policy.ActAdd, PolicyName: "a", Path: "a.md", Title: "A"}, {Action: policy.ActAdd, PolicyName: "b", Path: "b.md", Title: "B"}}
	r := Run{outcome: outcomeSynced, plan: policy.Plan{Items: items, Omitted: &policy.Counts{Added: 199_998}}}
	var w bytes.Buffer
	r.Write(&w, false, Palette{})
	out := w.String()
	for _, want := range []string{"  … and 199998 more changes not listed: a first sync in windows lists its first 100", "Plan: 200000 to add, 0 to change, 0 to move, 0 to delete."} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// A first sync in windows that stopped counts the files of the windows it
// did not reach as waiting: the headline says how many of them they are
// (files, not planned yet), for the deadline and for the budget.
func TestRunHeadline_WindowsNotReached_Said(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		early bool
		want  string
	}{
		{true, ", 95 waiting for the next run (stopped before the deadline; 90 of them policy files of windows not reached)"},
		{false, ", 95 waiting for the daily write budget (90 of them policy files of windows not reached)"},
	} {
		r := Run{outcome: outcomePartial, sum: policy.RunSummary{CommitSHA: "abc", Mode: "full", Waiting: 95, StoppedEarly: c.early, Unreached: 90}}
		if got := r.headline(Palette{}); !strings.Contains(got, c.want) {
			t.Errorf("headline %q lacks %q", got, c.want)
		}
	}
}
