package registry

import (
	"fmt"
	"time"
)

// The key schema (docs/design.md "Registry schema"): key prefixes and fixed
// keys. No other keys are ever written.
const (
	PolicyPrefix     = "policy:"
	QueuePrefix      = "queue:"
	DeadLetterPrefix = "dead-letter:"
	RunPrefix        = "metadata:sync:run:"
	LastRunKey       = "metadata:sync:lastRun"
	LastCommitKey    = "metadata:sync:lastCommit"
	LeaseKey         = "metadata:sync:lease"
)

// RunTTL is how long a run-history key lives.
const RunTTL = 90 * 24 * time.Hour

// maxInvertedMillis is the base of run-history keys: 13 nines, so keys stay
// 13 digits (and sort newest first) until the year 2286.
const maxInvertedMillis = 9999999999999

// PolicyKey returns the key of a policy: policy:{name}.
func PolicyKey(name string) string { return PolicyPrefix + name }

// QueueKey returns the key of a queue entry: queue:{name}.
func QueueKey(name string) string { return QueuePrefix + name }

// DeadLetterKey returns the key of a dead letter: dead-letter:{name}.
func DeadLetterKey(name string) string { return DeadLetterPrefix + name }

// RunKey returns the run-history key of a run that started at at:
// metadata:sync:run:{invertedMillis}:{runID}, invertedMillis being
// 9999999999999 minus at's Unix milliseconds, zero-padded to 13 digits, so
// a prefix scan lists the newest run first.
func RunKey(at time.Time, runID string) string {
	inv := int64(maxInvertedMillis) - at.UnixMilli()
	inv = min(max(inv, 0), maxInvertedMillis)
	return fmt.Sprintf("%s%013d:%s", RunPrefix, inv, runID)
}
