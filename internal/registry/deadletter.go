package registry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/knue/syncjob/internal/queue"
)

// RetryDeadLetter puts the dead letter of name back in the queue (queue.Requeue:
// its failures no longer counted) for the next sync to retry, then removes
// the dead letter, and tells the next run to retry it (Registry.RequestRetry).
// An error wrapping policy.ErrNotFound when there is none.
func (r *Registry) RetryDeadLetter(ctx context.Context, name string, now time.Time) error {
	if err := r.requeueDeadLetter(ctx, name, now); err != nil {
		return err
	}
	if err := r.RequestRetry(ctx, name); err != nil {
		return fmt.Errorf("retry dead letter %s: queued, but the next run on an unchanged head may not see it: %w", name, err)
	}
	return nil
}

// RetryDeadLetters is RetryDeadLetter for each of names, telling the next
// run about all of them in one write of lastRun: one write each would read
// lastRun again each time, and on Workers KV a read may not see the write
// made just before, losing every request but the last (review). It
// returns the names retried, and the errors of the others.
func (r *Registry) RetryDeadLetters(ctx context.Context, names []string, now time.Time) ([]string, error) {
	retried := []string{}
	var errs []error
	for _, name := range names {
		if err := r.requeueDeadLetter(ctx, name, now); err != nil {
			errs = append(errs, err)
			continue
		}
		retried = append(retried, name)
	}
	if len(retried) == 0 {
		return retried, errors.Join(errs...)
	}
	if err := r.RequestRetry(ctx, retried...); err != nil {
		errs = append(errs, fmt.Errorf("retry dead letters %v: queued, but the next run on an unchanged head may not see them: %w", retried, err))
	}
	return retried, errors.Join(errs...)
}

// requeueDeadLetter puts the dead letter of name back in the queue and
// removes it.
func (r *Registry) requeueDeadLetter(ctx context.Context, name string, now time.Time) error {
	d, err := r.DeadLetter(ctx, name)
	if err != nil {
		return fmt.Errorf("retry dead letter %s: %w", name, err)
	}
	put := PutQueue(queue.Requeue(d, now))
	if errs := r.Write(ctx, put); errs != nil {
		return fmt.Errorf("registry: retry dead letter %s: %w", name, errs[put.Key()])
	}
	del := DeleteDeadLetter(name)
	if errs := r.Write(ctx, del); errs != nil {
		return fmt.Errorf("registry: retry dead letter %s: queued, but the dead letter stays: %w", name, errs[del.Key()])
	}
	return nil
}

// DropDeadLetter forgets the dead letter of name and its failures: it no
// longer holds a version back. The registry entry stays as it is until the
// next run, which plans name from the head again (Registry.RequestRetry) —
// the registry must end up equal to the head. Dropping one that is not
// there succeeds.
func (r *Registry) DropDeadLetter(ctx context.Context, name string) error {
	del := DeleteDeadLetter(name)
	if errs := r.Write(ctx, del); errs != nil {
		return fmt.Errorf("registry: drop dead letter %s: %w", name, errs[del.Key()])
	}
	if err := r.RequestRetry(ctx, name); err != nil {
		return fmt.Errorf("registry: drop dead letter %s: dropped, but the next run on an unchanged head may not look at it again: %w", name, err)
	}
	return nil
}

// IsUnreadable reports whether err says a stored value exists but does not
// decode (a dead letter written by hand, say): it can still be dropped.
func IsUnreadable(err error) bool {
	var bad *DecodeError
	return errors.As(err, &bad)
}
