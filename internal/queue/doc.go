// Package queue holds the retry and dead-letter rules of queue:{policyName}
// entries, shared by the sync (a write that failed) and by downstream
// workers (a re-index that failed), and a small Consumer API for those
// workers: take the entries that are ready, acknowledge them, or fail them.
package queue
