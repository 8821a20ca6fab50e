// Package queue holds the retry and dead-letter rules of queue:{policyName}
// entries, shared by the sync (a write that failed) and by downstream
// workers (a re-index that failed), and the dead-letter operations a person
// asks for (retry, drop). Workers outside this module follow the same rules
// from the registry's published JSON Schemas; there is no Go API for them.
package queue
