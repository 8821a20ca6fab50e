package policy

// Registry key prefixes and fixed keys (docs/design.md "Registry schema").
const (
	PolicyPrefix     = "policy:"
	QueuePrefix      = "queue:"
	DeadLetterPrefix = "dead-letter:"
	RunPrefix        = "metadata:sync:run:"
	LastRunKey       = "metadata:sync:lastRun"
	LastCommitKey    = "metadata:sync:lastCommit"
	LeaseKey         = "metadata:sync:lease"
)

// TimeLayout is how every timestamp of the registry is written: ISO 8601
// in UTC, to the second.
const TimeLayout = "2006-01-02T15:04:05Z"

// Cloudflare KV limits, enforced by every backend.
const (
	MaxKeyBytes        = 512
	MaxValueBytes      = 25 << 20
	MaxMetadataBytes   = 1024
	MinTTLSeconds      = 60
	DefaultMaxFileSize = 1 << 20
)
