package syncer

import (
	"context"
	"errors"
	"fmt"

	"github.com/knue/syncjob/internal/registry"
)

// ErrLeaseHeld is returned when another run holds the single-writer lease.
var ErrLeaseHeld = registry.ErrLeaseHeld

// lease is what a run knows of the single-writer lease.
type lease struct {
	owner   string
	held    bool // this run took it, and releases it with its record
	refused bool // another run held it: this run records its history only
}

// takeLease takes the advisory single-writer lease (see registry.Lease)
// before the run reads the state it plans from. A dry run and a run
// without a lease TTL (the embedded file, locked by its process) take none.
func (r *run) takeLease(ctx context.Context) (lease, error) {
	l := lease{owner: r.opt.LeaseOwner}
	if l.owner == "" {
		// A retry of the same Lambda invocation (same request id, passed
		// as LeaseOwner) takes over the lease its crashed try left.
		l.owner = r.id
	}
	if r.opt.DryRun || r.opt.LeaseTTL <= 0 {
		return l, nil
	}
	err := r.Registry.TakeLease(ctx, l.owner, r.now(), r.opt.LeaseTTL)
	if errors.Is(err, registry.ErrLeaseHeld) {
		l.refused = true
		return l, err
	}
	if err != nil {
		return l, fmt.Errorf("registry: take lease: %w", err)
	}
	l.held = true
	return l, nil
}

// release is the write that releases the lease, with the run's record. A
// run that is not recorded leaves its lease to the TTL.
func (r *run) release(l lease) []registry.Write {
	if !l.held {
		return nil
	}
	return []registry.Write{registry.LeaseRelease(l.owner, r.now())}
}
