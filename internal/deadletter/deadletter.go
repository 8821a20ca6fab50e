// Package deadletter is what an operator does to dead letters: retry one or
// every one, or drop one. A change holds the single-writer lease while it
// writes and reports success only once it has read back that the change
// holds: a sync rewrites lastRun too, and KV cannot tell two writes apart.
// The CLI (cmd/syncjob) asks, parses and prints; this package changes the
// registry.
package deadletter

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/report"
)

// Find reads the dead letter of name. An unreadable one is returned with
// its name and the error, so that it can still be dropped.
func Find(ctx context.Context, reg *registry.Registry, name string) (policy.DeadLetter, error) {
	d, err := reg.DeadLetter(ctx, name)
	switch {
	case errors.Is(err, policy.ErrNotFound):
		return policy.DeadLetter{}, fmt.Errorf("no dead letter named %q (syncjob deadletter list)", name)
	case registry.IsUnreadable(err):
		return policy.DeadLetter{QueueEntry: policy.QueueEntry{PolicyName: name}, Reason: "unreadable value"}, err
	}
	return d, err
}

// Retry puts the dead letter of name back in the queue under the lease and
// ends the lease, verifying that the retry holds.
func Retry(ctx context.Context, reg *registry.Registry, lease *Lease, name string) error {
	if _, err := Find(ctx, reg, name); err != nil {
		return errors.Join(fmt.Errorf("deadletter retry: %w", err), lease.End(ctx, false))
	}
	if err := reg.RetryDeadLetter(ctx, name, lease.now()); err != nil {
		return errors.Join(err, lease.End(ctx, false)) // it says "registry: retry dead letter NAME"
	}
	return lease.End(ctx, true, name)
}

// RetryAll retries every dead letter that can be read under the lease and
// ends the lease, verifying that the retries hold. It returns the names
// retried (nil when the lease ended in an error); the error names the
// unreadable ones, to be dropped.
func RetryAll(ctx context.Context, reg *registry.Registry, lease *Lease) ([]string, error) {
	letters, err := reg.DeadLetters(ctx)
	if err != nil && letters == nil {
		return nil, errors.Join(fmt.Errorf("deadletter retry --all: %w", err), lease.End(ctx, false))
	}
	retried, rerr := reg.RetryDeadLetters(ctx, slices.Sorted(maps.Keys(letters)), lease.now())
	var errs []error
	if rerr != nil {
		errs = append(errs, rerr)
	}
	if err := lease.End(ctx, true, retried...); err != nil {
		return nil, err
	}
	var bad *registry.DecodeError
	if errors.As(err, &bad) {
		for _, key := range slices.Sorted(maps.Keys(bad.Problems)) {
			name := strings.TrimPrefix(key, registry.DeadLetterPrefix)
			errs = append(errs, fmt.Errorf("%s is unreadable and cannot be retried (syncjob deadletter drop %s --yes)", name, name))
		}
	}
	if len(errs) > 0 {
		return retried, fmt.Errorf("deadletter retry --all: %w", errors.Join(errs...))
	}
	return retried, nil
}

// Drop forgets the dead letter of name under the lease and ends the lease,
// verifying that the drop holds.
func Drop(ctx context.Context, reg *registry.Registry, lease *Lease, name string) error {
	if err := reg.DropDeadLetter(ctx, name); err != nil {
		return errors.Join(err, lease.End(ctx, false)) // it says "registry: drop dead letter NAME"
	}
	return lease.End(ctx, true, name)
}

// WhatStays says what the registry keeps of name once its dead letter is
// gone: until the next run, which plans it from the head again.
func WhatStays(ctx context.Context, reg *registry.Registry, name string) (string, error) {
	const until = "until the next run, which plans it from the head again"
	e, present, err := reg.Policy(ctx, name)
	if err != nil && !registry.IsUnreadable(err) {
		return "", err
	}
	if !present {
		return fmt.Sprintf("%s is not in the registry and stays out %s", name, until), nil
	}
	return fmt.Sprintf("the registry keeps %s at its current version (%s, %s) %s", name, report.OrDash(report.Short(e.SHA)), report.OrDash(e.Path), until), nil
}

// NotDuringASync refuses a change named what while a sync holds the lease
// (before anything is asked); the change itself then holds the lease (Hold).
func NotDuringASync(ctx context.Context, reg *registry.Registry, what string, now time.Time) error {
	l, err := reg.Lease(ctx)
	if err != nil && !registry.IsUnreadable(err) {
		return fmt.Errorf("%s: %w", what, err)
	}
	if l != nil && l.Holds(now) {
		return syncRunning(what, *l)
	}
	return nil
}

func syncRunning(what string, l registry.Lease) error {
	return fmt.Errorf("%s: a sync is running (lease held by %s until %s); try again when it has finished", what, l.Owner, l.ExpiresAt)
}
