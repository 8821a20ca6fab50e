package syncer_test

import (
	"errors"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/syncer"
)

// TestWindows_ShortSecondaryLimitPastTheDeadline_NotReached: a later
// window's listing (or archive) answered GitHub's secondary rate limit with a short
// Retry-After (one the run waits out: github.MaxRateLimitWait) whose wait
// would end past the deadline is a retry owed past the deadline, as a 502's
// is: that window is one not reached, the run partial — not failed and
// dirty, exit 1.
func TestWindows_ShortSecondaryLimitPastTheDeadline_NotReached(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{githubtest.KindTree, githubtest.KindArchiveLink, githubtest.KindArchive} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			shortLimitPastDeadline(t, kind)
		})
	}
}

func shortLimitPastDeadline(t *testing.T, kind string) {
	t.Helper()
	const n = 120
	r := newCFRig(t, n, nil)
	ctx := newNearingDeadline()
	opt := faultAfterFirstWindow(r, ctx, kind, githubtest.SecondaryRateLimit(403, 5*time.Second), 400*time.Millisecond, nil)
	res, err := r.run(ctx, opt)
	sum, written := res.Summary, len(r.policyNames())
	if !errors.Is(err, syncer.ErrPartial) || sum.Status != policy.RunPartial || sum.Dirty || written == 0 || sum.Unreached != n-written {
		t.Fatalf("%v, %s, dirty %v, %d written, %d not reached: want partial, the rest of %d not reached", err, sum.Status, sum.Dirty, written, sum.Unreached, n)
	}
}
