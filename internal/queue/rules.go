package queue

import (
	"time"

	"github.com/knue/syncjob/internal/policy"
)

// MaxFailures is how many failures an entry survives: at the MaxFailures-th
// it leaves the queue for dead-letter:{policyName}.
const MaxFailures = 3

// FailedIn returns e after a failure with msg in attempt: one more failure
// (see Failed), unless attempt already failed e (the same Lambda invocation
// retried by Lambda): then only the message changes. An empty attempt is
// always a new failure.
func FailedIn(e policy.QueueEntry, msg, attempt string, now time.Time) (next policy.QueueEntry, dead *policy.DeadLetter) {
	if attempt != "" && e.AttemptID == attempt && e.ErrorMessage != nil {
		e.ErrorMessage = &msg
		return e, nil
	}
	e.AttemptID = attempt
	return Failed(e, msg, now)
}

// Failed returns e after one more failure with msg: retryCount+1 and the
// error message. When that is the MaxFailures-th failure, dead is the
// dead letter that replaces it (the entry must then leave the queue).
func Failed(e policy.QueueEntry, msg string, now time.Time) (next policy.QueueEntry, dead *policy.DeadLetter) {
	e.RetryCount++
	e.ErrorMessage = &msg
	if e.CreatedAt == "" {
		e.CreatedAt = now.UTC().Format(policy.TimeLayout)
	}
	if e.RetryCount >= MaxFailures {
		return e, &policy.DeadLetter{QueueEntry: e, DeadAt: now.UTC().Format(policy.TimeLayout), Reason: msg}
	}
	return e, nil
}

// SyncPending reports whether q records a write the sync still owes: it
// failed and the registry entry (current, present) does not hold its version
// (or, for a failed delete, still exists). Entries that are not pending are
// the workers' to take.
func SyncPending(q policy.QueueEntry, current policy.Entry, present bool) bool {
	if q.ErrorMessage == nil {
		return false
	}
	if q.Operation == policy.OpDelete {
		return present
	}
	return !present || current.SHA != q.SHA
}

// Requeue returns the queue entry that retries a dead letter by hand: the
// same version, no failures counted, and a message saying why it is back.
func Requeue(d policy.DeadLetter, now time.Time) policy.QueueEntry {
	q := d.QueueEntry
	q.RetryCount = 0
	msg := "retry requested by hand at " + now.UTC().Format(policy.TimeLayout) + " after: " + d.Reason
	q.ErrorMessage = &msg
	return q
}

// Op is the queue operation that records a write of the item (and a
// failure of it).
func Op(it policy.Item) string {
	switch it.Action {
	case policy.ActAdd:
		return policy.OpAdd
	case policy.ActDelete:
		return policy.OpDelete
	}
	return policy.OpUpdate
}

// HeldBackReason is the skip reason of a version a dead letter holds back.
func HeldBackReason(name string) string {
	return "dead letter (syncjob deadletter retry " + name + ")"
}
