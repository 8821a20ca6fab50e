// Package logkey names the keys of every log line syncjob writes, once, so
// that log queries (infra/README.md's CloudWatch Logs Insights queries, the
// alarms' filters) can rely on them. Each component logs through a
// sub-logger that adds Component.
package logkey

// Who and where.
const (
	Component = "component"
	RunID     = "runId"
	RequestID = "awsRequestId"
	Delivery  = "delivery"
	Trigger   = "trigger"
	Repo      = "repo"
	Branch    = "branch"
	Commit    = "commit"
	Previous  = "previousCommit"
	Mode      = "mode"
	DryRun    = "dryRun"
	Status    = "status"
	Reason    = "reason"
	Error     = "error"
)

// What a line is about.
const (
	Key        = "key"
	Policy     = "policyName"
	Path       = "path"
	Winner     = "winner"
	Losers     = "losers"
	Files      = "files"
	Entries    = "entries"
	Puts       = "puts"
	Deletes    = "deletes"
	RetryCount = "retryCount"
	Retries    = "retries"
	// A first sync in windows (internal/syncer): which, of how many
	FirstSyncWindow  = "firstSyncWindow"
	FirstSyncWindows = "firstSyncWindows"
	Unreached        = "unreached" // policy files of the windows a first sync did not reach
)

// Counts of a run's summary line.
const (
	Added           = "added"
	Updated         = "updated"
	Moved           = "moved"
	Deleted         = "deleted"
	Migrated        = "migrated"
	Unchanged       = "unchanged"
	Skipped         = "skipped"
	Conflicts       = "conflicts"
	Failed          = "failed"
	HeldBack        = "heldBack"
	Requests        = "requests"
	BillableWrites  = "billableWrites"
	BillableDeletes = "billableDeletes"
	Duration        = "durationMs"
	Phases          = "phasesMs"
	Planned         = "planned"
	// The policies a run names: failed, skipped, held back by a dead letter.
	FailedPolicies   = "failedPolicies"
	Changes          = "changes"        // the run's changes (policy.RunChange), the first 100
	ChangesOmitted   = "changesOmitted" // how many more changes the run applied
	SkippedPolicies  = "skippedPolicies"
	HeldBackPolicies = "heldBackPolicies"
	WaitingPolicies  = "waitingPolicies" // left for the next run: the budget, or the run's deadline
)

// The daily write budget.
const (
	Spent   = "spent"
	Budget  = "budget"
	Waiting = "waiting"
)

// HTTP and retries. Attempt numbers a retry (1 for the first).
const (
	Op      = "op"
	Method  = "method"
	Attempt = "attempt"
	Wait    = "wait"
	Window  = "window"
)

// The Lambda handler's own lines and the metrics line.
const (
	Full        = "full"
	Items       = "items"
	Part        = "part"  // which of a dry-run plan's lines this is, from 1
	Parts       = "parts" // how many lines the plan takes
	RunDeadline = "runDeadline"
	SetupMs     = "setupMs"
	TotalMs     = "totalMs"
	RemainingMs = "remainingMs"
	TimedOut    = "timedOut" // the run stopped for the Lambda timeout
	Timestamp   = "timestamp"
)
