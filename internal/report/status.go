package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// Status is what "syncjob status --json" prints.
type Status struct {
	Repo             string               `json:"repo,omitempty"`
	Branch           string               `json:"branch,omitempty"`
	SettingsRepo     string               `json:"settingsRepo,omitempty"`   // GITHUB_REPO, when it or
	SettingsBranch   string               `json:"settingsBranch,omitempty"` // GITHUB_BRANCH differs from what the last run synced
	Registry         string               `json:"registry"`
	Writer           *registry.BoltWriter `json:"writer,omitempty"`
	Lease            *registry.Lease      `json:"lease"`
	LeaseExpired     bool                 `json:"leaseExpired,omitempty"`
	LastRun          *policy.RunSummary   `json:"lastRun"`
	LastCommit       string               `json:"lastCommit"`
	LastSuccess      string               `json:"lastSuccess,omitempty"`
	SinceLastSuccess string               `json:"sinceLastSuccess,omitempty"`
	Policies         int                  `json:"policies"`
	QueueDepth       int                  `json:"queueDepth"`
	WaitingRetry     int                  `json:"waitingRetry"`
	DeadLetters      []policy.DeadLetter  `json:"deadLetters"`
	// UnreadablePolicies are policies whose stored value does not decode
	// (read on the registry file only).
	UnreadablePolicies []string `json:"unreadablePolicies,omitempty"`
	// UnreadableDeadLetters are dead letters whose value does not decode.
	UnreadableDeadLetters []string            `json:"unreadableDeadLetters,omitempty"`
	Runs                  []policy.RunSummary `json:"runs"`
	Health                Health              `json:"health"`

	LastSuccessAt time.Time `json:"-"` // LastSuccess, to compute with
}

// PrintStatus prints the report for a person.
func PrintStatus(w io.Writer, rep Status) {
	line := func(label, format string, args ...any) {
		fmt.Fprintf(w, "%-15s%s\n", label, Printable(fmt.Sprintf(format, args...)))
	}
	if rep.Repo != "" {
		line("repository", "%s, branch %s", rep.Repo, rep.Branch)
	}
	if rep.SettingsRepo != "" {
		line("settings", "GITHUB_REPO and GITHUB_BRANCH name %s, branch %s: not what the last run synced; the next sync reads them", rep.SettingsRepo, rep.SettingsBranch)
	}
	line("registry", "%s, %s", rep.Registry, Count(rep.Policies, "policy", "policies"))
	if rep.Writer != nil {
		line("writer", "%s (a sync is running)", rep.Writer)
	}
	if rep.LastRun != nil && rep.LastRun.Mirror != nil {
		line("content mirror", "%s", mirrorStatus(rep.LastRun.Mirror))
	}
	if n := len(rep.UnreadablePolicies); n > 0 {
		line("unreadable", "%s: %s (syncjob sync --full writes again those the head has; the others are kept: remove them by hand)", Count(n, "policy", "policies"), strings.Join(rep.UnreadablePolicies, ", "))
	}
	line("lease", "%s", leaseText(rep.Lease, rep.LeaseExpired, rep.LastRun))
	printLastRun(line, rep.LastRun)
	line("last commit", "%s", OrDash(rep.LastCommit))
	if rep.LastSuccess == "" {
		line("last success", "none in the run history")
	} else {
		line("last success", "%s (%s ago)", rep.LastSuccess, rep.SinceLastSuccess)
	}
	line("queue", "%s, %d waiting for retry", Count(rep.QueueDepth, "entry", "entries"), rep.WaitingRetry)
	line("dead letters", "%d", len(rep.DeadLetters)+len(rep.UnreadableDeadLetters))
	for _, d := range rep.DeadLetters {
		fmt.Fprintf(w, "  %s  (%s of %s, %d tries, since %s): %s\n", Printable(d.PolicyName), d.Operation, Short(d.SHA), d.RetryCount, d.DeadAt, Printable(d.Reason))
	}
	for _, name := range rep.UnreadableDeadLetters {
		fmt.Fprintf(w, "  %s  (unreadable: syncjob deadletter drop %s --yes)\n", Printable(name), Printable(name))
	}
	line("health", "%s", rep.Health)
	PrintRecentRuns(w, rep.Runs)
}

// LeaseText says who holds the lease l, and until when.
func LeaseText(l *registry.Lease, expired bool) string {
	switch {
	case l == nil:
		return "none"
	case l.Released():
		return fmt.Sprintf("free (released by %s at %s)", l.Owner, l.ReleasedAt)
	case expired:
		return fmt.Sprintf("expired, left by %s (taken %s, until %s): that run did not finish; the next run takes the lease over and plans from the head tree", l.Owner, l.AcquiredAt, l.ExpiresAt)
	default:
		return fmt.Sprintf("held by %s since %s, until %s", l.Owner, l.AcquiredAt, l.ExpiresAt)
	}
}

// Unfinished says whether the lease l was left by a run that never
// recorded its end (killed, or its record failed): not released, expired,
// and not the lease the run lastRun records took (or with no run
// recorded). That run names the owner it took the lease as; a record
// from before it did is judged by its run id, else by time: the lease
// taken after that run had ended. (Timestamps are whole seconds: a second
// of slack. Time alone misjudges back-to-back Lambda runs, whose leases are
// owned by request ids.)
func Unfinished(l *registry.Lease, expired bool, lr *policy.RunSummary) bool {
	if l == nil || l.Released() || !expired {
		return false
	}
	if lr == nil {
		return true
	}
	taken, err1 := time.Parse(policy.TimeLayout, l.AcquiredAt)
	started, err2 := time.Parse(policy.TimeLayout, lr.Timestamp)
	if lr.LeaseOwner != "" {
		// a retry of the same Lambda invocation shares the owner: a lease
		// taken before the recorded run started is an earlier attempt's
		if l.Owner != lr.LeaseOwner {
			return true
		}
		// the same owner: an earlier attempt's (taken before the run
		// started) or a later one's (taken after it ended) is not its own
		return err1 == nil && err2 == nil && (taken.Before(started) ||
			taken.After(started.Add(time.Duration(lr.DurationMs)*time.Millisecond+time.Second)))
	}
	if l.Owner == lr.RunID {
		return false
	}
	if err1 != nil || err2 != nil {
		return true
	}
	return taken.After(started.Add(time.Duration(lr.DurationMs)*time.Millisecond + time.Second))
}

// leaseText is LeaseText for status, which knows the last run: an expired
// lease that run took is one whose release was lost, not a run that did
// not finish.
func leaseText(l *registry.Lease, expired bool, lr *policy.RunSummary) string {
	if l != nil && !l.Released() && expired && !Unfinished(l, expired, lr) {
		return fmt.Sprintf("expired, not released by %s (taken %s), whose end the last run records; the next run takes the lease over and plans from the head tree", l.Owner, l.AcquiredAt)
	}
	return LeaseText(l, expired)
}

func printLastRun(line func(label, format string, args ...any), lr *policy.RunSummary) {
	printRunSummary(line, "last run", lr)
}

// printRunSummary prints a run's summary, its first line labelled label.
func printRunSummary(line func(label, format string, args ...any), label string, lr *policy.RunSummary) {
	if lr == nil {
		line(label, "none recorded")
		return
	}
	line(label, "%s  %s  (%s mode, trigger %s, run %s, %s)", lr.Timestamp, strings.ToUpper(lr.Status), OrDash(lr.Mode), OrDash(lr.Trigger), lr.RunID, humanDuration(time.Duration(lr.DurationMs)*time.Millisecond))
	line("commits", "%s -> %s", OrDash(Short(lr.PreviousCommitSHA)), OrDash(Short(lr.CommitSHA)))
	line("counts", "%d added, %d updated, %d moved, %d deleted, %d unchanged, %d skipped, %d conflicts, %d failed",
		lr.Added, lr.Updated, lr.Moved, lr.Deleted, lr.Unchanged, len(lr.Skipped), len(lr.Conflicts), lr.ErrorCount)
	if lr.Error != "" {
		line("error", "%s", lr.Error)
	}
	for _, f := range lr.Failures {
		line("failed", "%s: %s", f.PolicyName, f.Error)
	}
	if p := lr.Planned; p != nil {
		line("planned", "%d to add, %d to change, %d to move, %d to delete (not all applied)", p.Added, p.Updated, p.Moved, p.Deleted)
	}
	if lr.Waiting > 0 && lr.StoppedEarly {
		line("waiting", "%d changes wait: the run stopped before its deadline; %d policies written so far; the next run continues%s", lr.Waiting, lr.Policies, lr.WaitingShown())
	} else if lr.Waiting > 0 {
		line("waiting", "%d changes wait for the daily write budget (DAILY_WRITE_BUDGET); %d policies written so far; the next run continues%s", lr.Waiting, lr.Policies, lr.WaitingShown())
	}
	for _, sk := range lr.HeldBack {
		line("held back", "%s (%s)", sk.PolicyName, sk.Path)
	}
	if lr.Unverified != "" {
		line("unverified", "%s", lr.Unverified)
	}
}

// PrintRecentRuns prints the recent runs, newest first, one a line.
func PrintRecentRuns(w io.Writer, runs []policy.RunSummary) {
	if len(runs) == 0 {
		return
	}
	fmt.Fprintln(w, "recent runs")
	t := &Table{}
	t.Add("TIME", "STATUS", "MODE", "TRIGGER", "ADDED", "UPDATED", "DELETED", "FAILED", "COMMIT", "DURATION")
	for _, r := range runs {
		t.Add(r.Timestamp, r.Status, OrDash(r.Mode), OrDash(r.Trigger), fmt.Sprint(r.Added), fmt.Sprint(r.Updated+r.Moved),
			fmt.Sprint(r.Deleted), fmt.Sprint(r.ErrorCount), OrDash(Short(r.CommitSHA)), humanDuration(time.Duration(r.DurationMs)*time.Millisecond))
	}
	t.Write(w, "  ", Palette{})
}
