package registry

import (
	"encoding/json"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/knue/syncjob/internal/policy"
)

// breakLeftLease ends at once a lease that still holds when a writer opens
// the file: the writer holds the file's lock, so the run that took the lease
// is gone (killed: its lock died with it). The lease is not marked released,
// so the next run still sees a run that did not finish and plans from the
// head tree; it only no longer waits out the lease's TTL.
func breakLeftLease(bk *bolt.Bucket, now time.Time) error {
	raw := bk.Get([]byte(LeaseKey))
	if raw == nil {
		return nil
	}
	env, err := decodeEnvelope(raw)
	if err != nil || expired(env.exp, now) {
		return nil // unreadable or gone: the run reads it as such
	}
	var l Lease
	if json.Unmarshal(env.value, &l) != nil || !l.Holds(now) {
		return nil
	}
	l.ExpiresAt = now.UTC().Format(policy.TimeLayout)
	env.value = MustJSON(l)
	return bk.Put([]byte(LeaseKey), env.encode())
}
