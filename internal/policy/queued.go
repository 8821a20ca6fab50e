package policy

// Queued is the version one queue:{policyName} entry announces: what a full
// run compares with the registry's policies to repair the queue. A full
// run lists every one; it keeps them as a slice sorted by name (not a map),
// their strings in shared chunks (docs/bench.md, "A full run's memory").
type Queued struct {
	PolicyName string
	SHA        string // "" when the entry does not say (it matches no policy)
}
