// Package policy holds the domain of syncjob: the policy files a repository
// holds, the registry entries they become, the plan that turns one into the
// other and the summary of a run. Adapters (github, registry) and the pure
// differ import it; it imports nothing of theirs.
package policy
