package registrytest

import (
	"context"
	"sync"
	"time"
)

// Clock is a settable clock for stores and runs under test. Its zero value
// reads as the zero time; it is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock reading t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time; pass c.Now where a func() time.Time is asked.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Sleep waits d on the clock: it advances it by d at once, unless ctx is
// done. Pass c.Sleep where a run or an adapter asks how to wait, so that
// backoffs and Retry-After pauses cost no time while leases and TTLs see
// them pass.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.Advance(d)
	return nil
}
