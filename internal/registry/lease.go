package registry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/knue/syncjob/internal/policy"
)

// Lease is the value of metadata:sync:lease, the advisory single-writer
// lease a run takes before it reads the state it plans from.
//
// Workers KV has no compare-and-swap and is eventually consistent (about
// 60 s), so two runs that start together can both take it: the lease keeps
// out a second writer that starts while one runs (a backfill during the
// daily run), not a perfect race. Lambda's reserved concurrency of 1 is the
// hard guarantee there; the embedded file is locked by its one process.
type Lease struct {
	Owner      string `json:"owner"`
	AcquiredAt string `json:"acquiredAt"`
	ExpiresAt  string `json:"expiresAt"`
}

// Expired reports whether the lease no longer holds at now (an unreadable
// expiry counts as expired).
func (l Lease) Expired(now time.Time) bool {
	until, err := time.Parse(time.RFC3339, l.ExpiresAt)
	return err != nil || !now.Before(until)
}

// ErrLeaseHeld is returned by TakeLease when another owner holds the lease;
// the error is a *LeaseHeldError saying who and until when.
var ErrLeaseHeld = errors.New("another run holds the lease")

// LeaseHeldError names the holder of a lease that refused a run.
type LeaseHeldError struct{ Held Lease }

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("%v: %s since %s, until %s at the latest", ErrLeaseHeld, e.Held.Owner, e.Held.AcquiredAt, e.Held.ExpiresAt)
}

// Is makes errors.Is(err, ErrLeaseHeld) true.
func (e *LeaseHeldError) Is(target error) bool { return target == ErrLeaseHeld }

// Lease returns the lease as stored, or nil when there is none (an expired
// lease the backend has not dropped yet is returned: see Lease.Expired).
func (r *Registry) Lease(ctx context.Context) (*Lease, error) {
	raw, err := r.store.Get(ctx, policy.LeaseKey)
	if errors.Is(err, policy.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("registry: read lease: %w", err)
	}
	var l Lease
	if err := decodeObject(raw, &l); err != nil {
		var bad *DecodeError
		return nil, bad.add(policy.LeaseKey, err)
	}
	return &l, nil
}

// TakeLease takes the lease for owner until now+ttl (ttl at least Cloudflare's
// minimum of 60 s), unless another owner holds it unexpired: then a
// *LeaseHeldError. The same owner takes it again (a retry of the same
// Lambda invocation takes over what its crashed try left); a lease that does
// not decode (a *DecodeError from Lease) is taken over.
func (r *Registry) TakeLease(ctx context.Context, owner string, now time.Time, ttl time.Duration) error {
	held, err := r.Lease(ctx)
	var bad *DecodeError
	switch {
	case err != nil && !errors.As(err, &bad):
		return err
	case held != nil && held.Owner != owner && !held.Expired(now):
		return &LeaseHeldError{Held: *held}
	}
	return r.writeLease(ctx, owner, now, now.Add(max(ttl, policy.MinTTLSeconds*time.Second)))
}

// RenewLease extends owner's lease to now+ttl.
func (r *Registry) RenewLease(ctx context.Context, owner string, now time.Time, ttl time.Duration) error {
	return r.writeLease(ctx, owner, now, now.Add(max(ttl, policy.MinTTLSeconds*time.Second)))
}

// ReleaseLease ends owner's lease now (it is written expired, with the
// shortest TTL, one request fewer than reading it back and deleting it).
func (r *Registry) ReleaseLease(ctx context.Context, owner string, now time.Time) error {
	if failed := r.Write(ctx, LeaseRelease(owner, now)); failed != nil {
		return &BatchError{Op: "release lease", Failed: failed}
	}
	return nil
}

// LeaseRelease is the write that releases owner's lease now, for a caller
// that batches it with other writes (RecordRun).
func LeaseRelease(owner string, now time.Time) Write {
	at := now.UTC().Format(policy.TimeLayout)
	return withTTL(policy.LeaseKey, MustJSON(Lease{Owner: owner, AcquiredAt: at, ExpiresAt: at}), policy.MinTTLSeconds*time.Second)
}

// BreakLease removes the lease whoever holds it: for a person who knows the
// holder is gone ("syncjob lease release").
func (r *Registry) BreakLease(ctx context.Context) error {
	if failed := r.store.Delete(ctx, []string{policy.LeaseKey}); failed != nil {
		return &BatchError{Op: "break lease", Failed: failed}
	}
	return nil
}

func (r *Registry) writeLease(ctx context.Context, owner string, now, until time.Time) error {
	value := MustJSON(Lease{Owner: owner, AcquiredAt: now.UTC().Format(policy.TimeLayout), ExpiresAt: until.UTC().Format(policy.TimeLayout)})
	if failed := r.Write(ctx, withTTL(policy.LeaseKey, value, until.Sub(now))); failed != nil {
		return fmt.Errorf("registry: write lease: %w", failed[policy.LeaseKey])
	}
	return nil
}
