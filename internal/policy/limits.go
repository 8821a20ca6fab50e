package policy

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

// MaxNameBytes is the longest policyName whose every key fits MaxKeyBytes:
// the longest, dead-letter:{policyName}, takes 12 bytes more (the registry
// keeps the two in step: internal/registry's key schema).
const MaxNameBytes = MaxKeyBytes - len("dead-letter:")
