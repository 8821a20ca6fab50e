package syncer_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
	"github.com/knue/syncjob/internal/registry/registrytest"
	"github.com/knue/syncjob/internal/syncer"
)

// retryCounted is how many queue entries count a failed try.
func retryCounted(cf *cloudflaretest.Fake) int {
	n := 0
	for _, k := range cf.Keys() {
		if v, _, _ := cf.Value(k); strings.HasPrefix(k, registry.QueuePrefix) && strings.Contains(string(v), `"retryCount":1`) {
			n++
		}
	}
	return n
}

// A 429 (Retry-After 300 s) on the publish request of a 10,000-a-batch run
// 302 s before its deadline: the retry, 300 s plus up to a tenth of jitter,
// would end after the deadline, so none is made. The syncer compared the
// 429's time without the jitter, called the whole batch failed and counted
// a retry on every entry (an adversarial helper). The writes wait now, as
// with 290 s left; with 340 s the retry goes and the run succeeds.
func TestDeadline_429WhoseRetryWithItsJitterPassesTheDeadline_Waits(t *testing.T) {
	t.Parallel()
	for _, left := range []time.Duration{290 * time.Second, 302 * time.Second, 340 * time.Second} {
		t.Run(left.String(), func(t *testing.T) {
			t.Parallel()
			cfClock := registrytest.NewClock(time.Now())
			r := newCFRig(t, 100, func(c *cloudflare.Config) { c.Now = cfClock.Now; c.Sleep = cfClock.Sleep })
			r.bulk.before = func(k int) {
				if k == 3 { // the lease, the announce batch, then the publish batch
					r.cf.FailNext(cloudflaretest.RateLimit(300 * time.Second))
				}
			}
			ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(left))
			defer cancel()
			res, _ := r.run(ctx, syncer.Options{BatchSize: 10000})
			if sum := res.Summary; len(sum.Failures) > 0 || retryCounted(r.cf) > 0 {
				t.Errorf("status %s: %d failures, %d entries counting a retry; want none (the deadline kept the retry, not Cloudflare)", sum.Status, len(sum.Failures), retryCounted(r.cf))
			}
		})
	}
}

// A publish answer lists one key unsuccessful 0.9 s before the deadline:
// its re-send, a second later, would end after it, so none is made. The
// key was a failure counting a retry; it waits now (an adversarial helper).
func TestDeadline_UnsuccessfulKeyWhoseReSendPassesTheDeadline_Waits(t *testing.T) {
	t.Parallel()
	r := newCFRig(t, 30, nil)
	ctx := newNearingDeadline()
	victim := registry.PolicyKey("정책 0007")
	r.bulk.before = func(k int) {
		if k == 3 { // the lease, the announce batch, the publish batch
			r.cf.FailKeys(victim)
		}
	}
	r.bulk.after = func(k int) {
		if k == 3 {
			r.cf.FailKeys() // Cloudflare would take it on a re-send
			ctx.near(900 * time.Millisecond)
		}
	}
	res, _ := r.run(ctx, syncer.Options{BatchSize: 10000, StopBefore: 500 * time.Millisecond})
	if sum := res.Summary; len(sum.Failures) > 0 || sum.Waiting == 0 {
		t.Errorf("status %s, failures %+v, waiting %d: want the key waiting, no failure", sum.Status, sum.Failures, sum.Waiting)
	}
	if v, _, _ := r.cf.Value(registry.QueueKey("정책 0007")); strings.Contains(string(v), `"retryCount":1`) {
		t.Errorf("its queue entry counts a failed try: %s", v)
	}
}
