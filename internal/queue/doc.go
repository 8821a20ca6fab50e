// Package queue holds the retry and dead-letter rules of queue:{policyName}
// entries: how a failed write counts, when its entry becomes a dead letter,
// and how a dead letter a person retries is queued again (registry and
// internal/deadletter do the writes). Workers outside this module follow the
// same rules from the registry's published JSON Schemas; there is no Go API
// for them.
package queue
