package policy

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors that adapters translate vendor errors into. Wrap them with
// fmt.Errorf("github: get tree %s: %w", sha, err) and test with errors.Is.
var (
	// ErrNotFound: the thing asked for does not exist (a key, a blob, a repository).
	ErrNotFound = errors.New("not found")
	// ErrRateLimited: the remote API refused for a rate limit; see RateLimitError.
	ErrRateLimited = errors.New("rate limited")
	// ErrConfig: the configuration names something that does not exist or is refused
	// (unknown repository or branch, bad credentials). Not retried; exit code 2.
	ErrConfig = errors.New("configuration error")
	// ErrCompareUntrusted: the compare of two commits cannot be used for an
	// incremental run (base unknown, diverged or behind, too many files).
	ErrCompareUntrusted = errors.New("compare cannot be trusted")
	// ErrHeadBehind: the head is behind the base (the base contains it: a
	// rewind, or another branch); it wraps ErrCompareUntrusted too.
	ErrHeadBehind = errors.New("head behind base")
	// ErrTooLarge: a key, value or metadata breaks a registry limit.
	ErrTooLarge = errors.New("over limit")
)

// RateLimitError says when the caller may try again. It matches ErrRateLimited.
type RateLimitError struct {
	API     string    // "github", "cloudflare"
	Kind    string    // "primary" or "secondary"
	RetryAt time.Time // zero when the API did not say
}

func (e *RateLimitError) Error() string {
	msg := e.API + " " + e.Kind + " rate limit"
	if !e.RetryAt.IsZero() {
		msg += "; retry after " + e.RetryAt.UTC().Format(time.RFC3339)
	}
	return msg
}

// Is makes errors.Is(err, ErrRateLimited) true.
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }

// File is one blob of the head tree (or of a changeset) that may be a policy.
type File struct {
	Path string // repository path as git stores it (may be NFD)
	SHA  string // git blob sha, 40 hex
	Size int64  // bytes; -1 when unknown (a compare does not say)
}

// ChangeStatus is a file status of GitHub's compare.
type ChangeStatus string

const (
	Added    ChangeStatus = "added"
	Modified ChangeStatus = "modified"
	Removed  ChangeStatus = "removed"
	Renamed  ChangeStatus = "renamed"
	Copied   ChangeStatus = "copied"
	Changed  ChangeStatus = "changed"
)

// Change is one file of a compare. For Renamed, PreviousPath is the old path.
// For Removed, SHA is empty. Size is -1 (unknown).
type Change struct {
	Status       ChangeStatus
	Path         string
	PreviousPath string
	SHA          string
}

// Changeset is the trusted result of comparing base...head.
type Changeset struct {
	Base, Head string
	Changes    []Change
	// Commits are the commits of the range as the compare lists them,
	// oldest first, and TotalCommits how many the range has (the list may
	// be cut).
	Commits      []string
	TotalCommits int
	// Interim are policy paths a commit of the range changed that Changes
	// does not list (changed and changed back): the head tree decides them.
	Interim []string
}

// Entry is the value of policy:{policyName}.
type Entry struct {
	// not comparable: == would compare Legacy's pointer, not what it holds
	_           [0]func()
	PolicyName  string `json:"policyName"`
	Title       string `json:"title"`
	Status      string `json:"status"`
	LastUpdated string `json:"lastUpdated"`
	SHA         string `json:"sha"`
	Path        string `json:"path"`
	// Legacy holds the v1 fields carried over from the v1 entry of the same
	// title; nil when the entry carries none, as almost every entry does: a
	// full run holds every entry, and eight bytes an entry beside 64 is 12
	// MB at 200,000 (docs/bench.md, "A full run's memory"). Its
	// fields read as fileNo, previewUrl, downloadUrl and legacyUntil in
	// JSON; read them with V1 and set them with SetV1, never through the
	// pointer, which copies of the entry share.
	*Legacy
	// ContentETag is the ETag (hex MD5) of the content mirror's object of
	// this version, as the mirror returned it when the run uploaded it;
	// empty when no mirror holds it (none configured, or an entry from
	// before the mirror). A full run compares it with the mirror's listing.
	ContentETag string `json:"contentEtag,omitempty"`
}

// Legacy are an entry's v1 fields, carried over from the v1 entry of the
// same title until LegacyUntil (90 days after the migration), then dropped.
type Legacy struct {
	FileNo      string `json:"fileNo,omitempty"`
	PreviewURL  string `json:"previewUrl,omitempty"`
	DownloadURL string `json:"downloadUrl,omitempty"`
	LegacyUntil string `json:"legacyUntil,omitempty"`
}

// V1 returns the entry's v1 fields, empty when it carries none.
func (e Entry) V1() Legacy {
	if e.Legacy == nil {
		return Legacy{}
	}
	return *e.Legacy
}

// SetV1 sets the entry's v1 fields to a copy of l (none when l is empty),
// leaving the fields any other copy of the entry points to as they were.
func (e *Entry) SetV1(l Legacy) {
	if l == (Legacy{}) {
		e.Legacy = nil
		return
	}
	e.Legacy = &l
}

// HasLegacy reports whether the entry carries legacy v1 fields.
func (e Entry) HasLegacy() bool { return e.V1().Carried() }

// Carried reports whether l holds any of the v1 fields an entry carries
// (LegacyUntil only dates them).
func (l Legacy) Carried() bool { return l.FileNo != "" || l.PreviewURL != "" || l.DownloadURL != "" }

// IsV1 reports whether the entry is a legacy v1 entry (keyed by title, no sha).
func (e Entry) IsV1() bool { return e.SHA == "" }

// StatusActive is the only status syncjob writes.
const StatusActive = "active"

// QueueEntry is the value of queue:{policyName}.
type QueueEntry struct {
	PolicyName   string  `json:"policyName"`
	SHA          string  `json:"sha"`
	Operation    string  `json:"operation"` // "add" or "update"
	RetryCount   int     `json:"retryCount"`
	CreatedAt    string  `json:"createdAt"`
	ErrorMessage *string `json:"errorMessage"`
	FileNo       string  `json:"fileNo,omitempty"`
	// AttemptID names the attempt that last failed this entry (a Lambda
	// request id survives Lambda's own retries of an invocation), so that
	// an invocation and its automatic retries count as one failure.
	AttemptID string `json:"attemptId,omitempty"`
}

// Queue operations. The schema lists add and update; a delete the sync could
// not make needs a record too (OpDelete), retried like the others.
const (
	OpAdd    = "add"
	OpUpdate = "update"
	OpDelete = "delete"
)

// DeadLetter is the value of dead-letter:{policyName}.
type DeadLetter struct {
	QueueEntry
	DeadAt string `json:"deadAt"`
	Reason string `json:"reason"`
}

// Content is what a run keeps of one file it read: its size in bytes and
// its title (Title of its bytes). A file over the size limit is not read
// whole: its Size is then over the limit (exact when known) and Title empty.
type Content struct {
	Size  int64
	Title string
}

// Desired is one policy as the head should have it, before its content is read.
type Desired struct {
	PolicyName string
	Path       string // winning path (as in the repository)
	SHA        string
	Size       int64 // -1 when unknown
}

// Skip is a file that is not written, with why. Its registry entry (if any) is kept.
type Skip struct {
	PolicyName string `json:"policyName,omitempty"`
	Path       string `json:"path"`
	Reason     string `json:"reason"`
}

// Conflict: several paths give one policyName; Winner is the bytewise-first path.
type Conflict struct {
	PolicyName string   `json:"policyName"`
	Winner     string   `json:"winner"`
	Losers     []string `json:"losers"`
}

// Action is what the plan does with one policy. It is one byte, not a
// string (an item of 200,000 is 8 bytes smaller), and reads and writes as
// its name in JSON and text ("add", "update", ...); the zero Action is "".
type Action uint8

const (
	ActAdd    Action = iota + 1
	ActUpdate        // sha changed (content read, queue written)
	ActMove          // same sha, path changed: entry rewritten, no queue
	ActDelete
	// ActMigrate rewrites an entry whose content is unchanged to carry, or
	// drop, legacy v1 fields; or removes a v1 key whose fields moved on.
	ActMigrate
)

var actionNames = [...]string{ActAdd: "add", ActUpdate: "update", ActMove: "move", ActDelete: "delete", ActMigrate: "migrate"}

// String returns the action's name ("" for the zero Action).
func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return "action(" + strconv.Itoa(int(a)) + ")"
}

// MarshalText writes the action's name.
func (a Action) MarshalText() ([]byte, error) {
	if int(a) >= len(actionNames) {
		return nil, fmt.Errorf("marshal action: unknown action %d", a)
	}
	return []byte(actionNames[a]), nil
}

// UnmarshalText reads an action's name.
func (a *Action) UnmarshalText(text []byte) error {
	i := slices.Index(actionNames[:], string(text))
	if i < 0 {
		return fmt.Errorf("unmarshal action: unknown action %q", text)
	}
	*a = Action(i)
	return nil
}

// Item is one planned operation. It is compact (80 bytes: a first sync
// holds one per policy through its read and apply; docs/bench.md, "How we
// got here", "Memory, sixth pass"): its action a byte, and what it
// replaces held apart.
type Item struct {
	// not comparable: == would compare Old's pointer, not what it holds
	_      [0]func()
	Action Action `json:"action"`
	// TreeSize is the size the head tree gave an add's or an update's
	// file, when known (else 0): the read skips a file known too large
	// without asking for it (differ.Size, differ.Unread). It fits beside
	// Action. A size over 2 GiB would read as 2 GiB (and a skip would name
	// that size), but GitHub refuses blobs over 100 MB: no tree it serves
	// has such a file.
	TreeSize   int32  `json:"-"`
	PolicyName string `json:"policyName"`
	Path       string `json:"path,omitempty"`
	SHA        string `json:"sha,omitempty"`
	// Old is the entry an update, a move or a delete replaces; nil for an
	// add, which replaces none (every item of a first sync: two empty
	// strings, 32 bytes, an item). Its fields read as oldPath and oldSha
	// in JSON; OldPath and OldSHA read them whether or not it is nil.
	*Old
	Title string `json:"title,omitempty"` // filled once the content is read
}

// Old is the registry entry an item replaces: its path and sha.
type Old struct {
	Path string `json:"oldPath,omitempty"`
	SHA  string `json:"oldSha,omitempty"`
}

// OldOf is the entry of path and sha an item replaces; nil when both are
// empty (nothing recorded).
func OldOf(path, sha string) *Old {
	if path == "" && sha == "" {
		return nil
	}
	return &Old{Path: path, SHA: sha}
}

// OldPath is the path of the entry the item replaces; "" for an add.
func (it Item) OldPath() string {
	if it.Old == nil {
		return ""
	}
	return it.Old.Path
}

// OldSHA is the sha of the entry the item replaces; "" for an add.
func (it Item) OldSHA() string {
	if it.Old == nil {
		return ""
	}
	return it.Old.SHA
}

// Plan is what a run will write: puts (adds, updates, moves) before deletes.
type Plan struct {
	Items     []Item     `json:"items"`
	Unchanged int        `json:"unchanged"`
	Skipped   []Skip     `json:"skipped"`
	Conflicts []Conflict `json:"conflicts"`
	// HeldBack are versions the head wants that a dead letter holds back
	// until a person retries it (syncjob deadletter retry).
	HeldBack []Skip `json:"heldBack,omitempty"`
	// Omitted counts the changes the plan counts but does not hold: a
	// first sync planned in windows keeps its first MaxRunChanges items
	// (internal/syncer, windows.go). nil: every change is an item.
	Omitted *Counts `json:"omitted,omitempty"`
}

// Counts are the changes of a plan by kind.
type Counts struct {
	Added     int `json:"added"`
	Updated   int `json:"updated"`
	Moved     int `json:"moved"`
	Deleted   int `json:"deleted"`
	Migrated  int `json:"migrated,omitempty"`
	Unchanged int `json:"unchanged"`
}

// Counts returns the plan's changes by kind, the items it holds together
// with those it does not hold (Omitted).
func (p Plan) Counts() Counts {
	c := Counts{
		Added:     p.Count(ActAdd),
		Updated:   p.Count(ActUpdate),
		Moved:     p.Count(ActMove),
		Deleted:   p.Count(ActDelete),
		Migrated:  p.Count(ActMigrate),
		Unchanged: p.Unchanged,
	}
	if o := p.Omitted; o != nil {
		c.Added, c.Updated, c.Moved, c.Deleted, c.Migrated = c.Added+o.Added, c.Updated+o.Updated, c.Moved+o.Moved, c.Deleted+o.Deleted, c.Migrated+o.Migrated
	}
	return c
}

// Len is how many items the plan has: those it holds and those it only
// counts (Omitted).
func (p Plan) Len() int {
	n := len(p.Items)
	if o := p.Omitted; o != nil {
		n += o.Changes() + o.Migrated
	}
	return n
}

// Changes is how many adds, updates, moves and deletes the counts hold.
func (c Counts) Changes() int { return c.Added + c.Updated + c.Moved + c.Deleted }

// Count returns how many items have the action.
func (p Plan) Count(a Action) int {
	n := 0
	for _, it := range p.Items {
		if it.Action == a {
			n++
		}
	}
	return n
}

// Run statuses.
const (
	RunSuccess = "success"
	RunPartial = "partial"
	RunFailed  = "failed"
	// RunRefused: a safety guard refused the plan, or another run held the
	// lease; nothing was written.
	RunRefused = "refused"
)

// Failure is one item that did not land.
type Failure struct {
	PolicyName string `json:"policyName"`
	Error      string `json:"error"`
}

// RunChange is one change a run applied (on a dry run, would apply), as
// the run history records it: the policy's name, its path and sha before
// and after (old ones empty for an add, new ones for a delete).
type RunChange struct {
	Action     Action `json:"action"` // add, update, move or delete
	PolicyName string `json:"policyName"`
	Path       string `json:"path,omitempty"`
	OldPath    string `json:"oldPath,omitempty"`
	SHA        string `json:"sha,omitempty"`
	OldSHA     string `json:"oldSha,omitempty"`
}

// MaxRunChanges is how many changes a run summary lists; the rest are
// counted (ChangesOmitted), so a full first run's summary stays small.
const MaxRunChanges = 100

// RunChanges returns the plan's adds, updates, moves and deletes in plan
// order, at most MaxRunChanges of them, and how many more there are.
func (p Plan) RunChanges() (changes []RunChange, omitted int) {
	changes = []RunChange{}
	for _, it := range p.Items {
		switch {
		case it.Action == ActMigrate:
		case len(changes) == MaxRunChanges:
			omitted++
		default:
			changes = append(changes, RunChange{Action: it.Action, PolicyName: it.PolicyName, Path: it.Path, OldPath: it.OldPath(), SHA: it.SHA, OldSHA: it.OldSHA()})
		}
	}
	if p.Omitted != nil {
		omitted += p.Omitted.Changes()
	}
	return changes, omitted
}

// RunSummary is the value of metadata:sync:lastRun and of each run-history key.
type RunSummary struct {
	Timestamp         string     `json:"timestamp"`
	TotalProcessed    int        `json:"totalProcessed"`
	Added             int        `json:"added"`
	Updated           int        `json:"updated"`
	Deleted           int        `json:"deleted"`
	Moved             int        `json:"moved"`
	Migrated          int        `json:"migrated,omitempty"`
	Unchanged         int        `json:"unchanged"`
	Status            string     `json:"status"`
	ErrorCount        int        `json:"errorCount"`
	CommitSHA         string     `json:"commitSHA"`
	PreviousCommitSHA string     `json:"previousCommitSHA"`
	RunID             string     `json:"runId"`
	Repo              string     `json:"repo,omitempty"`   // owner/name the registry was synced from after the run (a failed or refused run's: the last run's)
	Branch            string     `json:"branch,omitempty"` // its branch
	Trigger           string     `json:"trigger"`
	Delivery          string     `json:"delivery,omitempty"` // the GitHub delivery id of a webhook run
	Mode              string     `json:"mode"`
	ModeReason        string     `json:"modeReason,omitempty"`
	DryRun            bool       `json:"dryRun,omitempty"`
	DurationMs        int64      `json:"durationMs"`
	Skipped           []Skip     `json:"skipped"`
	Conflicts         []Conflict `json:"conflicts"`
	Failures          []Failure  `json:"failures,omitempty"`
	// Changes are the adds, updates, moves and deletes the run applied
	// (the first MaxRunChanges), ChangesOmitted how many more it applied.
	Changes        []RunChange      `json:"changes,omitempty"`
	ChangesOmitted int              `json:"changesOmitted,omitempty"`
	Error          string           `json:"error,omitempty"`
	Requests       map[string]int64 `json:"requests"`
	// BillableWrites and BillableDeletes are what a billing backend
	// (Cloudflare) charged for this run: each pair of a bulk write, each key
	// of a bulk delete.
	BillableWrites  int64 `json:"billableWrites,omitempty"`
	BillableDeletes int64 `json:"billableDeletes,omitempty"`
	// PhasesMs times the parts of the run: read (head and registry
	// metadata), plan (registry state, compare or tree), fetch (contents),
	// apply (writes) and record (the run's own metadata; in the log only).
	PhasesMs map[string]int64 `json:"phasesMs,omitempty"`
	// Mirror is what the run did to the content mirror; nil when none is
	// configured.
	Mirror      *MirrorSummary `json:"mirror,omitempty"`
	LastFullRun string         `json:"lastFullRun,omitempty"`
	// LastSuccess is when the last run that succeeded started (this one,
	// when it did): what a health check needs without the run history.
	LastSuccess string `json:"lastSuccess,omitempty"`
	// LeaseOwner is the owner this run takes the lease as (its run id, or
	// in Lambda "lambda {requestId}", which Lambda's retries share),
	// recorded whether it took the lease or not: an expired lease of
	// another owner is not this run's, so status --check tells a later run
	// that never recorded its end from this one's lost release. (A lease
	// left behind makes the next run full, which takes it over; only a run
	// failing before that leaves an earlier one, then judged unfinished.)
	// Empty in records from before it was recorded.
	LeaseOwner string `json:"leaseOwner,omitempty"`
	// Planned counts what the run planned when that is not what it applied
	// (a refused, failed or partial run); the counts above are what it
	// applied (on a dry run, what it would apply).
	Planned *Counts `json:"planned,omitempty"`
	// Pending names the policies whose failed writes the sync owes after
	// this run (their queue entries record the failure), so that the next
	// run on an unchanged head knows what to retry without listing the
	// queue. nil (absent) means unknown: the next run lists the queue.
	Pending []string `json:"pending"`
	// Policies is how many policies the registry holds after this run, and
	// LegacyV1 the titles of legacy v1 entries no policy has taken the
	// fields of: what the next incremental run, which reads only the
	// entries it touches, needs of the rest.
	Policies int      `json:"policies"`
	LegacyV1 []string `json:"legacyV1,omitempty"`
	// Waiting counts the planned items the daily write budget left for
	// another day: the run is partial and lastCommit stays, so the next
	// run plans them again.
	Waiting int `json:"waiting,omitempty"`
	// StoppedEarly says the run stopped applying before its deadline (the
	// Lambda's, or a rate window that would have waited past it), and
	// WaitingNames are the first 20 names it left for the next run (a
	// first sync in windows counts the windows it did not reach in
	// Waiting, unnamed: never listed).
	StoppedEarly bool     `json:"stoppedEarly,omitempty"`
	WaitingNames []string `json:"waitingNames,omitempty"`
	// Unreached counts, of Waiting, the policy files of a first sync's
	// windows the run did not reach (the deadline, the budget): not
	// planned yet, so files, not policies.
	Unreached int `json:"unreached,omitempty"`
	// Unverified says why the run trusted registry reads it should have
	// waited for (its deadline left no time to wait out an eventually
	// consistent registry's window): partial, lastCommit kept, the next
	// run full.
	Unverified string `json:"unverified,omitempty"`
	// HeldBack are the versions the head wants that a dead letter holds
	// back: while there are any, runs are partial.
	HeldBack []Skip `json:"heldBack,omitempty"`
	// QueueOrphans counts the queue entries announcing a policy that does
	// not exist that the last full run could not remove (carried by the
	// runs after it, which do not list the queue): status --check is
	// unhealthy while any is left.
	QueueOrphans int `json:"queueOrphans,omitempty"`
	// Dirty says the registry may differ from the head in ways no queue
	// entry records (the run failed after it began writing, or failed or
	// was refused having started from such a registry, or unable to read
	// whether it was): the next run plans from the head tree, not from a
	// compare.
	Dirty bool `json:"dirty,omitempty"`
}

// WaitingShown is " (names, …)" of the names the run left waiting and the
// files of windows it did not reach, or "" when it named none.
func (s RunSummary) WaitingShown() string {
	var parts []string
	if len(s.WaitingNames) > 0 {
		names := strings.Join(s.WaitingNames, ", ")
		if more := s.Waiting - s.Unreached - len(s.WaitingNames); more > 0 {
			names += fmt.Sprintf(" and %d more", more)
		}
		parts = append(parts, names)
	}
	if s.Unreached > 0 {
		parts = append(parts, fmt.Sprintf("%d policy files of windows not reached, not planned yet", s.Unreached))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// MirrorSummary is what one run did to the content mirror (or, on a dry
// run, would do).
type MirrorSummary struct {
	Target        string `json:"target"`             // the target's name (never a credential)
	Uploaded      int    `json:"uploaded"`           // objects stored
	Deleted       int    `json:"deleted"`            // objects removed
	BytesUploaded int64  `json:"bytesUploaded"`      // bytes of the objects stored
	Repaired      int    `json:"repaired,omitempty"` // of those, drift a full run repaired (uploads and deletes)
	// Objects is how many objects the prefix held after a full run, which
	// lists it; -1 when this run did not list it.
	Objects int `json:"objects"`
	// LastRepair is when a run last repaired drift (this one, or carried
	// from the one before), ISO 8601 UTC; empty when none has.
	LastRepair string `json:"lastRepair,omitempty"`
	// Converged is when a full run last listed the mirror and left it
	// equal to the head, carried from run to run; empty when none has, or
	// when a run since left drift that no queue entry records: the next
	// run is then full.
	Converged string `json:"converged,omitempty"`
}
