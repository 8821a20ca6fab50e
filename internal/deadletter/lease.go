package deadletter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// LeaseTTL is how long an operator's change holds the lease: Cloudflare's
// shortest TTL, far longer than the change takes.
const LeaseTTL = policy.MinTTLSeconds * time.Second

// Lease is the single-writer lease held by an operator's change to dead
// letters. The change rewrites lastRun (what the next run retries), which a
// sync rewrites too: holding the lease keeps a sync from starting
// meanwhile, and a change whose lease a sync took over before it was
// verified fails instead of reporting a success the sync's record may undo.
type Lease struct {
	reg   *registry.Registry
	now   func() time.Time
	warn  func(error) // hears a release that failed
	what  string
	found *registry.Lease // as read before: a lease a killed run left is put back
	taken registry.Lease
}

// Hold takes the lease for the change named what, refused (the holder
// named) while a sync holds it. warn hears a release that fails later.
func Hold(ctx context.Context, reg *registry.Registry, what string, now func() time.Time, warn func(error)) (*Lease, error) {
	found, err := reg.Lease(ctx)
	if err != nil && !registry.IsUnreadable(err) {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if found != nil && found.Holds(now()) {
		return nil, syncRunning(what, *found)
	}
	taken, err := reg.TakeLease(ctx, found, "syncjob "+what+" (operator)", now(), LeaseTTL)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &Lease{reg: reg, now: now, warn: warn, what: what, found: found, taken: taken}, nil
}

// ours says whether l is the lease this change took.
func (o *Lease) ours(l *registry.Lease) bool {
	return l != nil && l.Owner == o.taken.Owner && l.AcquiredAt == o.taken.AcquiredAt
}

// verify says whether the change holds: the lease is still this change's
// (a sync that took it over may record over the change), and every name of
// names is what the next run retries (lastRun.pending) with no dead letter
// left. The error says what does not hold.
func (o *Lease) verify(ctx context.Context, names ...string) error {
	l, err := o.reg.Lease(ctx)
	if err != nil {
		return fmt.Errorf("%s: verify: %w", o.what, err)
	}
	if !o.ours(l) {
		holder := "nobody"
		if l != nil {
			holder = l.Owner
		}
		return fmt.Errorf("%s: a sync started meanwhile (the lease is now %s's): its record may undo this change; when it has finished, check with syncjob deadletter list and syncjob status, and run this again if needed", o.what, holder)
	}
	last, err := o.reg.LastRun(ctx)
	if err != nil {
		return fmt.Errorf("%s: verify: %w", o.what, err)
	}
	var missing []string
	for _, name := range names {
		_, derr := o.reg.DeadLetter(ctx, name)
		requested := last == nil || slices.Contains(last.Pending, name) // no last run: the next one reads the whole queue
		if !errors.Is(derr, policy.ErrNotFound) || !requested {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: not in effect for %v: a dead letter is still there, or the next run will not retry it; check with syncjob deadletter list and run this again", o.what, missing)
	}
	return nil
}

// End verifies a change to names (when changed) and gives the lease up,
// unless a sync has taken it over: released, or, when a run that did not
// finish had left it, put back as that run left it (expired, not
// released), so the next sync still plans from the head tree. A lease not
// released expires within a minute.
func (o *Lease) End(ctx context.Context, changed bool, names ...string) error {
	var verr error
	if changed {
		verr = o.verify(ctx, names...)
	}
	if l, err := o.reg.Lease(ctx); err != nil || !o.ours(l) {
		return verr // not ours to release
	}
	var err error
	if o.found != nil && !o.found.Released() {
		err = o.reg.BreakLease(ctx, *o.found, o.now())
	} else {
		err = o.reg.ReleaseLease(ctx, o.taken, o.now())
	}
	if err != nil && o.warn != nil {
		o.warn(fmt.Errorf("%s: lease not released (it expires within a minute): %w", o.what, err))
	}
	return verr
}
