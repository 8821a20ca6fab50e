package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// Consumer is how a downstream worker (a re-indexer) works through the
// queue. The registry has no compare-and-swap, so Ack and Fail re-read the
// entry and leave it alone when a newer version was queued meanwhile; two
// workers on one queue can still both take an entry: run one.
type Consumer struct {
	Registry *registry.Registry
	Now      func() time.Time
}

func (c *Consumer) now() time.Time {
	if c.Now != nil {
		return c.Now().UTC()
	}
	return time.Now().UTC()
}

// ErrStale is returned by Ack and Fail when the queue no longer holds the
// version taken (it was acknowledged, or a newer version replaced it).
var ErrStale = errors.New("queue entry changed since it was taken")

// Take returns up to limit entries ready for a worker (all when limit <= 0),
// oldest first: every queue entry except those the sync still owes a write
// (their registry entry does not hold their version yet).
func (c *Consumer) Take(ctx context.Context, limit int) ([]policy.QueueEntry, error) {
	all, err := c.Registry.Queue(ctx)
	if err != nil {
		return nil, fmt.Errorf("queue: take: %w", err)
	}
	ready := make([]policy.QueueEntry, 0, len(all))
	for _, q := range all {
		if q.ErrorMessage != nil {
			cur, present, err := c.Registry.Policy(ctx, q.PolicyName)
			if err != nil {
				return nil, fmt.Errorf("queue: take: %w", err)
			}
			if SyncPending(q, cur, present) {
				continue
			}
		}
		ready = append(ready, q)
	}
	slices.SortFunc(ready, func(a, b policy.QueueEntry) int {
		return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(a.PolicyName, b.PolicyName))
	})
	if limit > 0 && len(ready) > limit {
		ready = ready[:limit]
	}
	return ready, nil
}

// Ack removes the entry: the worker is done with that version. ErrStale
// when the queue now holds another version (which stays for the worker).
func (c *Consumer) Ack(ctx context.Context, taken policy.QueueEntry) error {
	if _, err := c.current(ctx, taken); err != nil {
		return fmt.Errorf("queue: ack %s: %w", taken.PolicyName, err)
	}
	if errs := c.Registry.Write(ctx, registry.DeleteQueue(taken.PolicyName)); errs != nil {
		return fmt.Errorf("queue: ack %s: %w", taken.PolicyName, errs[registry.QueueKey(taken.PolicyName)])
	}
	return nil
}

// Fail records a failed attempt under the sync's rules: retryCount+1 and the
// message; at MaxFailures the entry becomes dead-letter:{policyName} and
// leaves the queue (dead is then true).
func (c *Consumer) Fail(ctx context.Context, taken policy.QueueEntry, cause error) (dead bool, err error) {
	cur, err := c.current(ctx, taken)
	if err != nil {
		return false, fmt.Errorf("queue: fail %s: %w", taken.PolicyName, err)
	}
	next, dl := Failed(cur, cause.Error(), c.now())
	if dl == nil {
		w := registry.PutQueue(next)
		if errs := c.Registry.Write(ctx, w); errs != nil {
			return false, fmt.Errorf("queue: fail %s: %w", taken.PolicyName, errs[w.Key()])
		}
		return false, nil
	}
	w := registry.PutDeadLetter(*dl)
	if errs := c.Registry.Write(ctx, w); errs != nil {
		return false, fmt.Errorf("queue: dead-letter %s: %w", taken.PolicyName, errs[w.Key()])
	}
	w = registry.DeleteQueue(taken.PolicyName)
	if errs := c.Registry.Write(ctx, w); errs != nil {
		return true, fmt.Errorf("queue: dead-letter %s: remove queue entry: %w", taken.PolicyName, errs[w.Key()])
	}
	return true, nil
}

// current reads the queue entry of taken and checks it is still that version.
func (c *Consumer) current(ctx context.Context, taken policy.QueueEntry) (policy.QueueEntry, error) {
	cur, err := c.Registry.QueueEntry(ctx, taken.PolicyName)
	if errors.Is(err, policy.ErrNotFound) {
		return policy.QueueEntry{}, ErrStale
	}
	if err != nil {
		return policy.QueueEntry{}, err
	}
	if cur.SHA != taken.SHA || cur.CreatedAt != taken.CreatedAt || cur.Operation != taken.Operation {
		return policy.QueueEntry{}, ErrStale
	}
	return cur, nil
}
