package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// operatorLeaseTTL is how long an operator's change holds the lease:
// Cloudflare's shortest TTL, far longer than the change takes.
const operatorLeaseTTL = policy.MinTTLSeconds * time.Second

// operatorLease is the single-writer lease held by an operator's change to
// dead letters ("deadletter retry", "drop"). The change rewrites lastRun
// (what the next run retries), which a sync rewrites too, and KV cannot
// tell the two writes apart: holding the lease keeps a sync from starting
// meanwhile, and a change whose lease a sync took over before it was
// verified fails instead of reporting a success the sync's record may undo.
type operatorLease struct {
	p     *program
	reg   *registry.Registry
	what  string
	found *registry.Lease // as read before: a lease a killed run left is put back
	taken registry.Lease
}

// holdLease takes the lease for what, refused (exit 1, the holder named)
// while a sync holds it.
func (p *program) holdLease(ctx context.Context, reg *registry.Registry, what string) (*operatorLease, error) {
	found, err := reg.Lease(ctx)
	if err != nil && !registry.IsUnreadable(err) {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if found != nil && found.Holds(p.now()) {
		return nil, syncRunning(what, *found)
	}
	taken, err := reg.TakeLease(ctx, found, "syncjob "+what+" (operator)", p.now(), operatorLeaseTTL)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &operatorLease{p: p, reg: reg, what: what, found: found, taken: taken}, nil
}

func syncRunning(what string, l registry.Lease) error {
	return &exitError{code: exitFailed, err: fmt.Errorf("%s: a sync is running (lease held by %s until %s); try again when it has finished", what, l.Owner, l.ExpiresAt)}
}

// verify says whether the change holds: the lease is still this change's
// (a sync that took it over may record over the change), and every name of
// names is what the next run retries (lastRun.pending) with no dead letter
// left. An error (exit 1) says what does not hold.
func (o *operatorLease) verify(ctx context.Context, names ...string) error {
	l, err := o.reg.Lease(ctx)
	if err != nil {
		return fmt.Errorf("%s: verify: %w", o.what, err)
	}
	if l == nil || l.Owner != o.taken.Owner || l.AcquiredAt != o.taken.AcquiredAt {
		holder := "nobody"
		if l != nil {
			holder = l.Owner
		}
		return &exitError{code: exitFailed, err: fmt.Errorf("%s: a sync started meanwhile (the lease is now %s's): its record may undo this change; when it has finished, check with syncjob deadletter list and syncjob status, and run this again if needed", o.what, holder)}
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
		return &exitError{code: exitFailed, err: fmt.Errorf("%s: not in effect for %v: a dead letter is still there, or the next run will not retry it; check with syncjob deadletter list and run this again", o.what, missing)}
	}
	return nil
}

// end verifies a change to names (when changed) and gives the lease up,
// unless a sync has taken it over: released, or, when a run that did not
// finish had left it, put back as that run left it (expired, not
// released), so the next sync still plans from the head tree. A lease
// not released expires within a minute.
func (o *operatorLease) end(ctx context.Context, changed bool, names ...string) error {
	var verr error
	if changed {
		verr = o.verify(ctx, names...)
	}
	if l, err := o.reg.Lease(ctx); err != nil || l == nil || l.Owner != o.taken.Owner || l.AcquiredAt != o.taken.AcquiredAt {
		return verr // not ours to release
	}
	var err error
	if o.found != nil && !o.found.Released() {
		err = o.reg.BreakLease(ctx, *o.found, o.p.now())
	} else {
		err = o.reg.ReleaseLease(ctx, o.taken, o.p.now())
	}
	if err != nil {
		fmt.Fprintf(o.p.stderr, "warning: %s: lease not released (it expires within a minute): %v\n", o.what, err)
	}
	return verr
}
