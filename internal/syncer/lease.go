package syncer

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/retry"
)

// ErrLeaseLost stops a run whose lease could not be renewed before it
// expired: another writer may now take it, so this one must stop writing.
var ErrLeaseLost = errors.New("lost the single-writer lease (renewals failed)")

// lease is what a run knows of the single-writer lease.
type lease struct {
	owner   string
	taken   registry.Lease
	held    bool // this run took it, and releases it once its record landed
	refused bool // another run held it: this run records its history only
	// overBudget: the day's write budget could not pay for the run's own
	// writes, so it took no lease and records nothing (budget.go)
	overBudget bool
}

// takeLease takes the advisory single-writer lease (see registry.Lease)
// before the run reads the state it plans from; st.lease is the lease as
// readState read it. A dry run and a run without a lease TTL take none. A
// budgeted run writes its reservation with it (budget.go).
func (r *run) takeLease(ctx context.Context, st state, mode string) (lease, error) {
	l := lease{owner: r.owner()}
	if r.opt.DryRun || r.opt.LeaseTTL <= 0 {
		return l, nil
	}
	reserve, err := r.leaseBudget(ctx, st, mode)
	if err != nil {
		l.overBudget = errors.Is(err, ErrBudget)
		return l, err
	}
	taken, err := r.Registry.TakeLease(ctx, st.lease, l.owner, r.now(), r.opt.LeaseTTL, reserve...)
	if errors.Is(err, registry.ErrLeaseHeld) {
		l.refused = true
		return l, err
	}
	if err != nil {
		return l, err
	}
	l.taken, l.held = taken, true
	return l, nil
}

// owner names this run in the lease: the attempt (a Lambda retry of the
// same invocation takes over what its crashed try left), else the run id.
func (r *run) owner() string {
	if a := r.attempt(); a != "" {
		return a
	}
	return r.id
}

// attempt names this attempt across Lambda's retries of one invocation
// (its request id, passed as LeaseOwner); "" outside Lambda.
func (r *run) attempt() string { return r.opt.LeaseOwner }

// keepLease renews a held lease every third of its TTL until stop is
// called. When renewals keep failing until the lease has expired, it
// cancels the returned context with ErrLeaseLost: a run that no longer
// holds the lease must not write beside another.
func (r *run) keepLease(ctx context.Context, l lease) (context.Context, func()) {
	if !l.held {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(max(r.opt.LeaseTTL/3, time.Millisecond))
		defer tick.Stop()
		cur := l.taken
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			next, err := r.Registry.RenewLease(ctx, cur, r.now(), r.opt.LeaseTTL)
			switch {
			case err == nil && next.Expired(r.now()):
				// the renewal waited (Cloudflare's rate window) until past
				// the expiry it asked for: another run may have taken it
				r.log.Error("lease lost", logkey.Error, "a renewal landed after the expiry it set")
				cancel(ErrLeaseLost)
				return
			case err == nil:
				cur = next
			case cur.Expired(r.now()):
				r.log.Error("lease lost", logkey.Error, err)
				cancel(ErrLeaseLost)
				return
			default:
				r.log.Warn("lease not renewed", logkey.Error, err)
			}
		}
	}()
	return ctx, func() {
		close(done)
		wg.Wait()
		cancel(nil)
	}
}

// release is the write that releases the lease, written after the run's
// record (see registry.RecordRun). A run whose record did not land leaves
// its lease behind: the evidence for the next run that it did not finish.
func (r *run) release(l lease) []registry.Write {
	if !l.held {
		return nil
	}
	return []registry.Write{registry.LeaseRelease(l.taken, r.now())}
}

// releaseAgain retries a release that did not land with the record, a few
// times a second or more apart (KV takes one write of a key a second). A
// lease still not released only costs the next run a full plan.
func (r *run) releaseAgain(ctx context.Context, l lease) {
	var err error
	for try := 0; try < 3; try++ {
		if try > 0 && r.sleep(ctx, 1100*time.Millisecond) != nil {
			break
		}
		if err = r.Registry.ReleaseLease(ctx, l.taken, r.now()); err == nil {
			return
		}
	}
	r.log.Warn("lease not released; the next run plans from the head tree", logkey.Error, err)
}

// sleep waits d, or until ctx ends (Syncer.Sleep).
func (s *Syncer) sleep(ctx context.Context, d time.Duration) error {
	if s.Sleep != nil {
		return s.Sleep(ctx, d)
	}
	return retry.Sleep(ctx, d)
}

// onlyLease reports whether err is a batch error that failed nothing but
// the lease's key.
func onlyLease(err error) bool {
	failed, ok := batchFailed(err)
	if !ok || len(failed) == 0 {
		return false
	}
	for k := range failed {
		if k != registry.LeaseKey {
			return false
		}
	}
	return true
}
