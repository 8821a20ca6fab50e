package syncer

// Log keys, shared by every line so that log queries can rely on them.
const (
	KeyRunID    = "runId"
	KeyRepo     = "repo"
	KeyBranch   = "branch"
	KeyCommit   = "commit"
	KeyPrevious = "previousCommit"
	KeyMode     = "mode"
	KeyReason   = "reason"
	KeyStatus   = "status"
	KeyError    = "error"
	KeyKey      = "key"
	KeyPolicy   = "policyName"
	KeyPath     = "path"
	KeyWinner   = "winner"
	KeyLosers   = "losers"
	KeyFiles    = "files"
	KeyPuts     = "puts"
	KeyDeletes  = "deletes"
	KeyDuration = "durationMs"
	KeyPhases   = "phasesMs"
	KeyTrigger  = "trigger"
	KeyRequests = "requests"
)

const timeLayout = "2006-01-02T15:04:05Z"
