package syncer

import (
	"context"
	"errors"
	"fmt"

	"github.com/knue/syncjob/internal/registry"
)

// ErrLeaseHeld is returned when another run holds the single-writer lease.
var ErrLeaseHeld = registry.ErrLeaseHeld

// acquireLease takes the advisory single-writer lease (see registry.Lease)
// before the run reads the state it plans from.
func (r *run) acquireLease(ctx context.Context) error {
	if r.opt.LeaseTTL <= 0 {
		return nil
	}
	err := r.Registry.TakeLease(ctx, r.leaseOwner(), r.now(), r.opt.LeaseTTL)
	if errors.Is(err, registry.ErrLeaseHeld) {
		r.leaseRefused = true
		return err
	}
	if err != nil {
		return fmt.Errorf("registry: take lease: %w", err)
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

// releaseWrites returns the write that releases the lease this run took,
// written with the run's record. A run that is not recorded leaves its
// lease to the TTL.
func (r *run) releaseWrites() []registry.Write {
	if !r.leased {
		return nil
	}
	return []registry.Write{registry.LeaseRelease(r.leaseOwner(), r.now())}
}
