package registry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/knue/syncjob/internal/policy"
)

// Lease is the value of metadata:sync:lease, the advisory single-writer
// lease a run takes before it reads the state it plans from, renews while it
// lasts and releases once its record has landed.
//
// Workers KV has no compare-and-swap and is eventually consistent (about
// 60 s), so two runs that start together can both take it: the lease keeps
// out a second writer that starts while one runs (a backfill during the
// daily run), not a perfect race. Lambda's reserved concurrency of 1 is the
// hard guarantee there; the embedded file is locked by its one process.
//
// The lease is also the evidence of a run that did not finish: its key
// lives for LeaseKeep whatever the lease's own expiry, and only a release
// (written after the run's record) marks it released. A lease left behind,
// expired or not, tells the next run that the registry may be half-written.
type Lease struct {
	Owner      string `json:"owner"`
	AcquiredAt string `json:"acquiredAt"`
	ExpiresAt  string `json:"expiresAt"`
	ReleasedAt string `json:"releasedAt,omitempty"`
}

// LeaseKeep is how long the lease key lives once written: the evidence of a
// run that did not finish must outlast the time to the next run.
const LeaseKeep = 30 * 24 * time.Hour

// Expired reports whether the lease no longer holds at now (an unreadable
// expiry counts as expired).
func (l Lease) Expired(now time.Time) bool {
	until, err := time.Parse(time.RFC3339, l.ExpiresAt)
	return err != nil || !now.Before(until)
}

// Released reports whether the run that held the lease released it: it
// finished and its record landed.
func (l Lease) Released() bool { return l.ReleasedAt != "" }

// Holds reports whether the lease keeps a writer other than its owner out
// at now.
func (l Lease) Holds(now time.Time) bool { return !l.Released() && !l.Expired(now) }

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

// Lease returns the lease as stored, or nil when there is none. A value
// that does not decode is a *DecodeError.
func (r *Registry) Lease(ctx context.Context) (*Lease, error) {
	raw, err := r.store.Get(ctx, LeaseKey)
	if errors.Is(err, policy.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("registry: read lease: %w", err)
	}
	return decodeLease(raw)
}

func decodeLease(raw []byte) (*Lease, error) {
	var l Lease
	if err := decodeObject(raw, &l); err != nil {
		var bad *DecodeError
		return nil, bad.add(LeaseKey, err)
	}
	return &l, nil
}

// TakeLease takes the lease for owner until now+ttl (ttl at least
// Cloudflare's minimum of 60 s) and returns it, unless held — the lease as
// the caller read it — is held by another owner at now: then a
// *LeaseHeldError. The same owner takes it again (a retry of the same Lambda
// invocation takes over what its crashed try left). The writes of with
// land in the same request as the lease (a run's reservation of its
// writes, see RunReservation); one that fails fails the take.
func (r *Registry) TakeLease(ctx context.Context, held *Lease, owner string, now time.Time, ttl time.Duration, with ...Write) (Lease, error) {
	if held != nil && held.Owner != owner && held.Holds(now) {
		return Lease{}, &LeaseHeldError{Held: *held}
	}
	l := Lease{Owner: owner, AcquiredAt: now.UTC().Format(policy.TimeLayout)}
	l, err := r.writeLease(ctx, l, now, ttl, with...)
	if err != nil {
		return l, fmt.Errorf("registry: take lease: %w", err)
	}
	return l, nil
}

// RenewLease extends the lease l to now+ttl and returns it.
func (r *Registry) RenewLease(ctx context.Context, l Lease, now time.Time, ttl time.Duration) (Lease, error) {
	l, err := r.writeLease(ctx, l, now, ttl)
	if err != nil {
		return l, fmt.Errorf("registry: renew lease: %w", err)
	}
	return l, nil
}

// ReleaseLease releases the lease l now.
func (r *Registry) ReleaseLease(ctx context.Context, l Lease, now time.Time) error {
	ctx = Recording(ctx)
	if failed := r.Write(ctx, LeaseRelease(l, now)); failed != nil {
		return &BatchError{Op: "release lease", Failed: failed}
	}
	return nil
}

// LeaseRelease is the write that releases the lease l now, for a caller
// that batches it with other writes (RecordRun): the lease marked released,
// kept only for Cloudflare's shortest TTL.
func LeaseRelease(l Lease, now time.Time) Write {
	at := now.UTC().Format(policy.TimeLayout)
	l.ExpiresAt, l.ReleasedAt = at, at
	return withTTL(LeaseKey, MustJSON(l), policy.MinTTLSeconds*time.Second)
}

// BreakLease ends the lease l now whoever holds it, for a person who knows
// the holder is gone ("syncjob lease release"): it expires at once, but is
// not marked released, so the next run still sees that its holder did not
// finish, takes it over and plans from the head tree.
func (r *Registry) BreakLease(ctx context.Context, l Lease, now time.Time) error {
	l.ExpiresAt, l.ReleasedAt = now.UTC().Format(policy.TimeLayout), ""
	if failed := r.Write(ctx, withTTL(LeaseKey, MustJSON(l), LeaseKeep)); failed != nil {
		return &BatchError{Op: "break lease", Failed: failed}
	}
	return nil
}

// writeLease writes l held until now+ttl, and with beside it; the key
// itself lives LeaseKeep. Its error is the store's (naming the key when a
// write of with failed): the caller says what the write was for.
func (r *Registry) writeLease(ctx context.Context, l Lease, now time.Time, ttl time.Duration, with ...Write) (Lease, error) {
	l.ExpiresAt = now.Add(max(ttl, policy.MinTTLSeconds*time.Second)).UTC().Format(policy.TimeLayout)
	l.ReleasedAt = ""
	failed := r.Write(ctx, append([]Write{withTTL(LeaseKey, MustJSON(l), LeaseKeep)}, with...)...)
	if err, ok := failed[LeaseKey]; ok {
		return l, err
	}
	if keys := sortedKeys(failed); len(keys) > 0 {
		return l, fmt.Errorf("%s: %w", keys[0], failed[keys[0]])
	}
	return l, nil
}
