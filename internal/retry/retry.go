package retry

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Decision is a classifier's verdict on one failed try.
type Decision struct {
	Retry bool
	// After is the wait the server asked for (Retry-After), 0 when none:
	// the Schedule then decides.
	After time.Duration
}

// Schedule returns the wait before retry n (0 for the first retry); after
// is the wait the server asked for, 0 when it asked none.
type Schedule func(n int, after time.Duration) time.Duration

// Policy is how one adapter retries.
type Policy struct {
	// MaxRetries bounds the retries after the first try.
	MaxRetries int
	// Wait schedules the waits between tries.
	Wait Schedule
	// Classify decides whether a failed try is retried. It never sees a
	// failure of a try whose context had ended: Do returns ctx.Err() then.
	Classify func(err error) Decision
	// Sleep waits d or until ctx is done; nil means Sleep.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnRetry, if set, hears of each retry before its wait: to log it, or
	// to hold back other callers for as long.
	OnRetry func(ctx context.Context, r Retry)
}

// Retry describes a coming retry, for Policy.OnRetry.
type Retry struct {
	N        int           // 1 for the first retry
	Wait     time.Duration // how long Do waits before it
	Err      error         // the failure it retries
	Decision               // the classifier's verdict on Err
}

// Do calls try until it succeeds, and returns its value. It returns the
// error of the last try when the classifier says it is final, after
// MaxRetries retries, or when the wait before the next try would pass ctx's
// deadline (such a wait is not started: the caller gets the failure itself,
// e.g. a rate limit saying when to retry, while it still has time to record
// it, not a deadline error after sleeping in vain); ctx.Err() as soon as
// ctx is done (before a try, or when a try fails meanwhile); the error of
// Sleep when a wait is cut short.
func Do[T any](ctx context.Context, p Policy, try func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	sleep := p.Sleep
	if sleep == nil {
		sleep = Sleep
	}
	for n := 0; ; n++ {
		if err := ctx.Err(); err != nil {
			return zero, err
		}
		v, err := try(ctx)
		if err == nil {
			return v, nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return zero, cerr
		}
		d := p.Classify(err)
		if !d.Retry || n >= p.MaxRetries {
			return zero, err
		}
		wait := p.Wait(n, d.After)
		if pastDeadline(ctx, wait) {
			return zero, &PastDeadline{Err: err, Wait: wait}
		}
		if p.OnRetry != nil {
			p.OnRetry(ctx, Retry{N: n + 1, Wait: wait, Err: err, Decision: d})
		}
		if err := sleep(ctx, wait); err != nil {
			return zero, err
		}
	}
}

// PastDeadline is what Do returns when the retry the schedule wanted
// would end after ctx's deadline: the last try's error (its text, and what
// it unwraps to), cut by the deadline rather than given up on. A caller
// that has the run's time run out wait (not count a failure) tells it so
// (an adversarial helper: a 429 whose Retry-After fitted but whose jitter
// did not, and a re-send of unsuccessful keys 0.9 s before the deadline,
// each counted a retry against every key of a batch).
type PastDeadline struct {
	Err  error
	Wait time.Duration // the wait the retry wanted
}

func (e *PastDeadline) Error() string { return e.Err.Error() }
func (e *PastDeadline) Unwrap() error { return e.Err }

// pastDeadline says whether waiting d would end after ctx's deadline.
func pastDeadline(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return ok && d > time.Until(deadline)
}

// Fixed is a schedule of the given waits, retry n waiting waits[n]; a
// server's wait is not consulted. Use len(waits) as MaxRetries.
func Fixed(waits []time.Duration) Schedule {
	return func(n int, _ time.Duration) time.Duration { return waits[n] }
}

// Jittered is exponential backoff with jitter: retry n waits a time drawn
// in [d/2, d], d being base doubled n times and at most max. A server's wait
// is honoured, plus up to a tenth of it, so that the callers it turned away
// together do not return together. r is locked while drawn from, so the
// schedule may serve concurrent callers.
func Jittered(base, max time.Duration, r *rand.Rand) Schedule {
	var mu sync.Mutex
	return func(n int, after time.Duration) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		if after > 0 {
			return after + time.Duration(r.Int64N(int64(after/10)+1))
		}
		d := base
		for i := 0; i < n && d < max; i++ {
			d *= 2
		}
		d = min(d, max)
		return d/2 + time.Duration(r.Int64N(int64(d/2)+1))
	}
}

// Sleep waits d, or until ctx is done and then returns ctx.Err().
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// At reads a Retry-After value, seconds or an HTTP date, as the time it
// names; false when v is empty or neither.
func At(v string, now time.Time) (time.Time, bool) {
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		return now.Add(time.Duration(secs) * time.Second), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return t, true
	}
	return time.Time{}, false
}

// After is how long a Retry-After value asks to wait from now: 0 when it is
// absent, unreadable or already past.
func After(v string, now time.Time) time.Duration {
	if at, ok := At(v, now); ok && at.After(now) {
		return at.Sub(now)
	}
	return 0
}
