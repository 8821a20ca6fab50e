package syncer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// ErrLeaseHeld is returned when another run holds the single-writer lease.
var ErrLeaseHeld = errors.New("another run holds the lease")

// lease is the value of metadata:sync:lease.
type lease struct {
	Owner      string `json:"owner"`
	AcquiredAt string `json:"acquiredAt"`
	ExpiresAt  string `json:"expiresAt"`
}

// acquireLease takes the advisory single-writer lease before the run writes.
// Workers KV has no compare-and-swap and is eventually consistent (about 60
// s), so two runs that start together can both take it: the lease stops a
// second writer that starts while one is running (a manual backfill during
// the daily run), not a perfect race. Lambda's reserved concurrency of 1 is
// the hard guarantee there; the embedded store is single-process.
func (r *run) acquireLease(ctx context.Context) error {
	if r.opt.LeaseTTL <= 0 {
		return nil
	}
	raw, err := r.Registry.Store().Get(ctx, policy.LeaseKey)
	switch {
	case errors.Is(err, policy.ErrNotFound):
	case err != nil:
		return fmt.Errorf("registry: read lease: %w", err)
	default:
		var held lease
		if json.Unmarshal(raw, &held) == nil && held.Owner != r.leaseOwner() {
			if until, err := time.Parse(time.RFC3339, held.ExpiresAt); err == nil && r.now().Before(until) {
				r.leaseRefused = true
				return fmt.Errorf("%w: %s since %s, until %s at the latest", ErrLeaseHeld, held.Owner, held.AcquiredAt, held.ExpiresAt)
			}
		}
	}
	ttl := max(r.opt.LeaseTTL, policy.MinTTLSeconds*time.Second)
	now := r.now()
	value, _ := json.Marshal(lease{Owner: r.leaseOwner(), AcquiredAt: now.Format(timeLayout), ExpiresAt: now.Add(ttl).Format(timeLayout)})
	if errs := r.Registry.Store().Put(ctx, []registry.Pair{{Key: policy.LeaseKey, Value: value, TTL: ttl}}); errs[policy.LeaseKey] != nil {
		return fmt.Errorf("registry: write lease: %w", errs[policy.LeaseKey])
	}
	r.leased = true
	return nil
}

// leaseOwner names this run in the lease. A retry of the same Lambda
// invocation (same request id) takes over the lease its crashed try left.
func (r *run) leaseOwner() string {
	if r.opt.LeaseOwner != "" {
		return r.opt.LeaseOwner
	}
	return r.sum.RunID
}

// releasePairs returns the write that releases the lease this run took:
// the lease again, expired now, written with the run's record (one request
// fewer than a delete). A run that is not recorded leaves its lease to the TTL.
func (r *run) releasePairs() []registry.Pair {
	if !r.leased {
		return nil
	}
	now := r.now().Format(timeLayout)
	value, _ := json.Marshal(lease{Owner: r.leaseOwner(), AcquiredAt: now, ExpiresAt: now})
	return []registry.Pair{{Key: policy.LeaseKey, Value: value, TTL: policy.MinTTLSeconds * time.Second}}
}
