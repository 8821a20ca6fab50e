package report

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/redact"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/syncer"
)

// Run is what the CLI prints of a run: first what happened, in its
// first word ("synced", "partial", "dry run", "refused:", "failed:"), then
// the plan, labelled "planned, not applied" when it was not written.
type Run struct {
	outcome string
	applied bool // the apply began: some of the plan may have landed
	err     error
	sum     policy.RunSummary
	plan    policy.Plan
}

// Outcomes of a run, as its report names them.
const (
	outcomeSynced  = "synced"
	outcomePartial = "partial"
	outcomeDryRun  = "dry run"
	outcomeRefused = "refused"
	outcomeFailed  = "failed"
)

// NewRun reports a run of res that ended with runErr; secrets are masked
// in everything it prints.
func NewRun(res syncer.Result, runErr error, dry bool, secrets []string) Run {
	_, applying := res.Summary.PhasesMs["apply"]
	r := Run{
		err:     runErr,
		sum:     redact.Summary(res.Summary, secrets),
		plan:    redact.Plan(res.Plan, secrets),
		applied: applying && !dry,
	}
	switch {
	case errors.Is(runErr, differ.ErrRefused), errors.Is(runErr, registry.ErrLeaseHeld): // as recorded
		r.outcome = outcomeRefused
	case runErr != nil && !errors.Is(runErr, syncer.ErrPartial):
		r.outcome = outcomeFailed
	case dry:
		r.outcome = outcomeDryRun
	case runErr != nil || res.Summary.Status == policy.RunPartial:
		r.outcome = outcomePartial
	default:
		r.outcome = outcomeSynced
	}
	return r
}

// RunJSON is what "syncjob sync --json" prints. Applied tells whether the
// plan was written (at least in part); the summary's counts are the run's.
type RunJSON struct {
	Outcome string            `json:"outcome"` // synced, partial, dry run, refused, failed
	Applied bool              `json:"applied"`
	Error   string            `json:"error,omitempty"`
	Summary policy.RunSummary `json:"summary"`
	Plan    policy.Plan       `json:"plan"`
}

// JSON is the report as "syncjob sync --json" prints it.
func (r Run) JSON() RunJSON {
	plan := r.plan
	plan.Items = orEmpty(plan.Items)
	plan.Skipped = orEmpty(plan.Skipped)
	plan.Conflicts = orEmpty(plan.Conflicts)
	out := RunJSON{Outcome: r.outcome, Applied: r.applied, Summary: r.sum, Plan: plan}
	if r.err != nil {
		out.Error = r.err.Error()
	}
	return out
}

// Write prints the report: the summary line, then (unless quiet) the plan
// with its closing line.
func (r Run) Write(w io.Writer, quiet bool, pal Palette) {
	fmt.Fprintln(w, r.headline(pal))
	if m := r.sum.Mirror; m != nil && !quiet {
		fmt.Fprintln(w, mirrorLine(m, r.outcome == outcomeDryRun))
	}
	if quiet || !r.hasRows() {
		return
	}
	switch {
	case r.outcome == outcomeFailed && r.applied:
		fmt.Fprintln(w, "planned; the run failed while writing it, so part of it may have landed (! failed):")
	case r.outcome != outcomeSynced && r.outcome != outcomePartial:
		fmt.Fprintln(w, "planned, not applied:")
	}
	limit := -1
	if r.outcome == outcomeFailed {
		limit = failedRowsShown
	}
	// streamed, not held: a first sync of 200,000 policies has as many rows (docs/bench.md)
	if n := WriteRows(w, "  ", pal, r.rows(), limit); limit >= 0 && n > limit {
		fmt.Fprintf(w, "  … and %d more (syncjob sync --dry-run lists them all)\n", n-limit)
	}
	if o := r.plan.Omitted; o != nil && o.Changes() > 0 {
		fmt.Fprintf(w, "  … and %d more changes not listed: a first sync in windows lists its first %d (syncjob list lists the policies)\n", o.Changes(), policy.MaxRunChanges)
	}
	fmt.Fprintln(w, planLine(r.plan))
}

// failedRowsShown is how much of a failed run's plan is printed: the run
// did not apply it, and thousands of lines would bury the error above.
const failedRowsShown = 20

// headline is the first line: what the run did, never "synced" for a run
// that wrote nothing.
func (r Run) headline(pal Palette) string {
	s := r.sum
	switch r.outcome {
	case outcomeRefused:
		return pal.paint(red, "refused:") + " " + refusal(r.err) + "; no policy written"
	case outcomeFailed:
		line := pal.paint(red, "failed:") + " " + strings.TrimSpace(r.err.Error())
		if !r.applied {
			line += "; no policy written"
		}
		return line
	case outcomeDryRun:
		return fmt.Sprintf("%s %s (%s mode), nothing written: %s (%s)", pal.paint(cyan, "dry run"), OrDash(Short(s.CommitSHA)), OrDash(s.Mode),
			strings.TrimSuffix(strings.TrimPrefix(planLine(r.plan), "Plan: "), "."), requestCounts(s))
	}
	word := pal.paint(green, outcomeSynced)
	dead := r.newlyDead()
	failed := fmt.Sprintf("%d failed", s.ErrorCount)
	if r.outcome == outcomePartial {
		failed += failedFate(s.ErrorCount, len(dead), r.unplanned())
	}
	if r.outcome == outcomePartial {
		word = pal.paint(yellow, outcomePartial)
	}
	if n := len(s.HeldBack) - len(dead); n > 0 {
		failed += fmt.Sprintf(", %d held back by %s", n, map[bool]string{true: "a dead letter", false: "dead letters"}[n == 1])
	}
	switch {
	case s.Waiting > 0 && s.StoppedEarly:
		failed += fmt.Sprintf(", %d waiting for the next run (stopped before the deadline%s)", s.Waiting, unreached(s, "; "))
	case s.Waiting > 0:
		failed += fmt.Sprintf(", %d waiting for the daily write budget", s.Waiting)
		if s.Unreached > 0 {
			failed += " (" + unreached(s, "") + ")"
		}
	}
	if s.Unverified != "" {
		failed += ", reads not verified (no time to wait out the registry's consistency window)"
	}
	return fmt.Sprintf("%s %s: %s mode, %d added, %d updated, %d moved, %d deleted, %d unchanged, %d skipped, %s (%s)",
		word, Short(s.CommitSHA), OrDash(s.Mode), s.Added, s.Updated, s.Moved, s.Deleted, s.Unchanged, len(s.Skipped), failed, requestCounts(s))
}

// unreached says how many of what waits are policy files of the windows a
// first sync did not reach (not planned, so files, not policies), after
// sep; "" when none.
func unreached(s policy.RunSummary, sep string) string {
	if s.Unreached == 0 {
		return ""
	}
	return fmt.Sprintf("%s%d of them policy files of windows not reached", sep, s.Unreached)
}

// refusal is the guard's reason, without the words of the sentinel.
func refusal(err error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, differ.RefusedPrefix); ok { // another guard's (differ.RefusedBy)
		return rest
	}
	if _, rest, ok := strings.Cut(msg, differ.ErrRefused.Error()); ok {
		return "mass-delete guard" + rest
	}
	return msg
}

func requestCounts(s policy.RunSummary) string {
	api, reqs := "registry", s.Requests["registry"]
	if n, ok := s.Requests["cloudflare"]; ok {
		api, reqs = "cloudflare", n
	}
	out := fmt.Sprintf("github %s, %s %d", Count(int(s.Requests["github"]), "request", "requests"), api, reqs)
	if n, ok := s.Requests["mirror"]; ok {
		out += fmt.Sprintf(", mirror %d", n)
	}
	return out
}

func (r Run) hasRows() bool {
	return len(r.plan.Items)+len(r.plan.Skipped)+len(r.plan.Conflicts)+len(r.sum.Failures)+len(r.heldBack()) > 0
}

// heldBack are the versions dead letters hold back: the plan's, or on a run
// that planned nothing (an unchanged head), what the summary carries on.
func (r Run) heldBack() []policy.Skip {
	if len(r.plan.HeldBack) > 0 {
		return r.plan.HeldBack
	}
	return r.sum.HeldBack
}

// Symbols of the plan's lines, and their colours.
var symbols = map[policy.Action]struct{ sym, colour string }{
	policy.ActAdd:     {"+", green},
	policy.ActUpdate:  {"~", yellow},
	policy.ActMigrate: {"~", yellow},
	policy.ActMove:    {"→", cyan},
	policy.ActDelete:  {"-", red},
}

const attention = "!" // failed, held back, skipped or in conflict

// rows are the plan, one line per change, then what needs a look.
func (r Run) rows() Rows {
	failed := map[string]string{}
	for _, f := range r.sum.Failures {
		failed[f.PolicyName] = f.Error
	}
	dead := r.newlyDead()
	return func(add func(colour string, row ...string) bool) {
		shown := make(map[string]bool, len(failed)) // a failure has its row once, on its item's line if it has one
		for _, it := range r.plan.Items {
			if !add(r.itemRow(it, failed, dead, shown)) {
				return
			}
		}
		for _, f := range r.sum.Failures { // failures of items the plan no longer lists
			if msg, ok := failed[f.PolicyName]; ok && !shown[f.PolicyName] {
				if !add(magenta, attention, f.PolicyName, dead[f.PolicyName].Path, "failed: "+msg+dead[f.PolicyName].note()) {
					return
				}
			}
		}
		r.attentionRows(dead, add)
	}
}

// itemRow is the line of one item of the plan: its change, or its failure.
func (r Run) itemRow(it policy.Item, failed map[string]string, dead map[string]heldBack, shown map[string]bool) (string, string, string, string, string) {
	path := it.Path
	switch {
	case path == "":
		path = it.OldPath() // a delete
	case it.OldPath() != "" && it.OldPath() != it.Path:
		path = it.OldPath() + " → " + it.Path
	}
	if msg, ok := failed[it.PolicyName]; ok && !shown[it.PolicyName] {
		shown[it.PolicyName] = true
		return magenta, attention, it.PolicyName, path, "failed: " + msg + dead[it.PolicyName].note()
	}
	s := symbols[it.Action]
	return s.colour, s.sym, it.PolicyName, path, it.Title
}

// attentionRows are the lines of what was skipped, is held back or is in
// conflict.
func (r Run) attentionRows(dead map[string]heldBack, add func(colour string, row ...string) bool) {
	for _, sk := range r.plan.Skipped {
		if !add(magenta, attention, sk.PolicyName, sk.Path, "skipped: "+sk.Reason) {
			return
		}
	}
	for _, hb := range r.heldBack() {
		if _, ok := dead[hb.PolicyName]; !ok { // a failure that just became a dead letter has its row
			if !add(magenta, attention, hb.PolicyName, hb.Path, "held back: "+hb.Reason) {
				return
			}
		}
	}
	for _, c := range r.plan.Conflicts {
		if !add(magenta, attention, c.PolicyName, c.Winner, "wins over "+strings.Join(c.Losers, ", ")) {
			return
		}
	}
}

// planLine is the plan's closing line.
func planLine(p policy.Plan) string {
	c := p.Counts()
	return fmt.Sprintf("Plan: %d to add, %d to change, %d to move, %d to delete.", c.Added, c.Updated+c.Migrated, c.Moved, c.Deleted)
}

// deadLetters says what n failures became.
func deadLetters(n int) string {
	if n == 1 {
		return "now a dead letter"
	}
	return "now dead letters"
}

// failedFate says what becomes of a partial run's failures: the plan's
// are queued for retry, or given up (dead letters); the others, which no
// queue entry records, wait for the next full run (a content mirror repair
// of a policy the plan did not touch, a superseded dead letter not
// removed) or for an operator (a foreign object no target may delete); an
// adversarial helper found them called "queued for retry", a reviewer the
// operator's called the next full run's.
func failedFate(n, dead int, u unplannedFailures) string {
	var parts []string
	if q := n - dead - u.nextFull - u.operator; q > 0 {
		parts = append(parts, fmt.Sprintf("%d queued for retry", q))
	}
	if dead > 0 {
		parts = append(parts, fmt.Sprintf("%d given up: %s", dead, deadLetters(dead)))
	}
	if u.nextFull > 0 {
		parts = append(parts, fmt.Sprintf("%d left for the next full run", u.nextFull))
	}
	if u.operator > 0 {
		parts = append(parts, fmt.Sprintf("%d for an operator", u.operator))
	}
	if len(parts) == 1 { // "(queued for retry)" alone, as before
		parts[0] = strings.TrimPrefix(parts[0], fmt.Sprint(n)+" ")
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// unplannedFailures counts a run's failures that are no planned write's.
type unplannedFailures struct{ nextFull, operator int }

// unplanned counts the failures that are no planned write's: a content
// mirror repair or foreign object, a superseded dead letter not removed
// (named by its key).
func (r Run) unplanned() unplannedFailures {
	planned := make(map[string]bool, len(r.plan.Items))
	for _, it := range r.plan.Items {
		planned[it.PolicyName] = true
	}
	var u unplannedFailures
	for _, f := range r.sum.Failures {
		switch {
		case planned[f.PolicyName]:
		case strings.Contains(f.Error, "an operator must"):
			u.operator++
		case strings.HasPrefix(f.Error, "content mirror"), strings.HasPrefix(f.PolicyName, registry.DeadLetterPrefix):
			u.nextFull++
		}
	}
	return u
}

// newlyDead are the failures of this run that a dead letter now holds back
// (the third failure), by name: each is shown once, as a failure, with
// what follows from it.
func (r Run) newlyDead() map[string]heldBack {
	failed := map[string]bool{}
	for _, f := range r.sum.Failures {
		failed[f.PolicyName] = true
	}
	dead := map[string]heldBack{}
	for _, hb := range r.heldBack() {
		if failed[hb.PolicyName] {
			dead[hb.PolicyName] = heldBack(hb)
		}
	}
	return dead
}

// heldBack is a version a dead letter holds back.
type heldBack policy.Skip

// note is what a failure row adds when the failure made a dead letter.
func (h heldBack) note() string {
	if h.PolicyName == "" {
		return ""
	}
	return "; given up, now held back: " + h.Reason
}

// orEmpty is s, or an empty slice for nil: JSON shows [] rather than null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Applied reports whether the apply began: some of the plan may have landed.
func (r Run) Applied() bool { return r.applied }
