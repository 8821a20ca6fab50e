package cloudflare_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
	"github.com/knue/syncjob/internal/registry/registrytest"
)

// runDeadline is a run that has far less time left than Cloudflare's
// five-minute block.
const runDeadline = 10 * time.Second

func wantRateLimit(t *testing.T, err error, retryAt time.Time) {
	t.Helper()
	var rl *policy.RateLimitError
	if !errors.As(err, &rl) || !errors.Is(err, policy.ErrRateLimited) || rl.API != "cloudflare" {
		t.Fatalf("err = %v, want a cloudflare *policy.RateLimitError", err)
	}
	if !rl.RetryAt.Equal(retryAt) {
		t.Errorf("RetryAt = %v, want %v", rl.RetryAt, retryAt)
	}
}

func TestStore_429PastTheDeadline_FailsAtOnceSayingWhen(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, nil)
	w.fake.FailNext(cloudflaretest.RateLimit(5 * time.Minute))
	ctx, cancel := context.WithTimeout(t.Context(), runDeadline)
	defer cancel()

	out := w.store.Put(ctx, []registry.Pair{{Key: "policy:a", Value: []byte("a")}})
	wantRateLimit(t, out["policy:a"], registrytest.Epoch.Add(5*time.Minute))
	if got := w.sleeps(); len(got) != 0 {
		t.Errorf("waited %v: a wait past the deadline must not start", got)
	}
	if got := w.store.Usage().Requests; got != 1 {
		t.Errorf("Requests = %d, want 1", got)
	}
}

func TestStore_TokenBlocked_NoFurtherRequestPastTheDeadline(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, nil)
	w.fake.Set("policy:a", []byte("a"), nil, 0)
	w.fake.FailNext(cloudflaretest.RateLimit(5 * time.Minute))
	ctx, cancel := context.WithTimeout(t.Context(), runDeadline)
	defer cancel()

	w.store.Put(ctx, []registry.Pair{{Key: "policy:b", Value: []byte("b")}})
	// The token is blocked for five minutes: another request would only
	// meet another 429 (and Cloudflare counts it).
	_, err := w.store.Get(ctx, "policy:a")
	wantRateLimit(t, err, registrytest.Epoch.Add(5*time.Minute))
	if got := w.fake.TotalRequests(); got != 1 {
		t.Errorf("the fake saw %d requests, want 1: none while the token is blocked", got)
	}
	if got, want := w.store.Usage().Requests, int64(w.fake.TotalRequests()); got != want {
		t.Errorf("Usage().Requests = %d, the fake saw %d", got, want)
	}
}

func TestStore_429WithoutRetryAfter_TakenAsTheFiveMinuteBlock(t *testing.T) {
	t.Parallel()
	t.Run("deadline allows", func(t *testing.T) {
		w := mustWorld(t, nil, nil)
		w.fake.Set("policy:a", []byte("a"), nil, 0)
		w.fake.FailNext(cloudflaretest.RateLimit(0))
		if got := string(registrytest.MustGet(t, w.store, "policy:a")); got != "a" {
			t.Fatalf("Get = %q, want a", got)
		}
		slept := w.sleeps()
		if len(slept) != 1 || slept[0] < 5*time.Minute || slept[0] > 5*time.Minute+30*time.Second {
			t.Errorf("waits = %v, want one of 5 minutes (plus at most a tenth)", slept)
		}
	})
	t.Run("past the deadline", func(t *testing.T) {
		w := mustWorld(t, nil, nil)
		w.fake.FailNext(cloudflaretest.RateLimit(0))
		ctx, cancel := context.WithTimeout(t.Context(), runDeadline)
		defer cancel()
		_, err := w.store.Get(ctx, "policy:a")
		wantRateLimit(t, err, registrytest.Epoch.Add(5*time.Minute))
	})
}

func TestStore_FullWindowPastTheDeadline_FailsAtOnceSayingWhen(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, func(c *cloudflare.Config) {
		c.RequestsPerWindow = 1
		c.Window = time.Minute
	})
	w.fake.Set("k", []byte("v"), nil, 0)
	ctx, cancel := context.WithTimeout(t.Context(), runDeadline)
	defer cancel()
	registrytest.MustGet(t, w.store, "k")

	_, err := w.store.Get(ctx, "k")
	wantRateLimit(t, err, registrytest.Epoch.Add(time.Minute))
	if got := w.fake.TotalRequests(); got != 1 {
		t.Errorf("the fake saw %d requests, want 1", got)
	}
	if got := w.sleeps(); len(got) != 0 {
		t.Errorf("waited %v past the deadline", got)
	}
}

// waitsHeard keeps what Config.OnWait hears.
type waitsHeard struct {
	mu    sync.Mutex
	heard []string
}

func (h *waitsHeard) on(d time.Duration, why string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.heard = append(h.heard, fmt.Sprintf("%s for %s", d, why))
}

func (h *waitsHeard) get() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.heard)
}

func TestStore_OnWait_HearsTheRateWindowBeforeWaiting(t *testing.T) {
	t.Parallel()
	h := &waitsHeard{}
	w := mustWorld(t, nil, func(c *cloudflare.Config) {
		c.RequestsPerWindow = 2
		c.Window = 4 * time.Minute
		c.OnWait = h.on
	})
	w.fake.Set("k", []byte("v"), nil, 0)
	registrytest.MustGet(t, w.store, "k")
	w.clock.Advance(time.Second)
	registrytest.MustGet(t, w.store, "k")
	registrytest.MustGet(t, w.store, "k") // the first leaves the window 3m59s later
	want := []string{"3m59s for " + cloudflare.WaitRateWindow}
	if diff := cmp.Diff(want, h.get()); diff != "" {
		t.Errorf("waits heard (-want +got):\n%s", diff)
	}
}

func TestStore_OnWait_HearsA429sRetryAfter(t *testing.T) {
	t.Parallel()
	h := &waitsHeard{}
	w := mustWorld(t, nil, func(c *cloudflare.Config) { c.OnWait = h.on })
	w.fake.Set("k", []byte("v"), nil, 0)
	w.fake.FailNext(cloudflaretest.RateLimit(30 * time.Second))
	registrytest.MustGet(t, w.store, "k")
	got := h.get()
	if len(got) == 0 || !strings.HasSuffix(got[0], " for "+cloudflare.Wait429) {
		t.Fatalf("waits heard %q, want the 429's first", got)
	}
	if d, err := time.ParseDuration(strings.TrimSuffix(got[0], " for "+cloudflare.Wait429)); err != nil || d < 30*time.Second || d > 33*time.Second {
		t.Errorf("the 429's wait heard is %q, want its Retry-After (30s) plus up to a tenth", got[0])
	}
}

// A run its full window stopped still records itself: the record's writes
// (registry.Recording) go up to RecordMargin requests past the window, and
// no further; other requests still meet the window.
func TestStore_FullWindow_TheRunsRecordGoesBeyondIt(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, func(c *cloudflare.Config) {
		c.RequestsPerWindow = 1
		c.Window = time.Minute
	})
	ctx, cancel := context.WithTimeout(t.Context(), runDeadline)
	defer cancel()
	if out := w.store.Put(ctx, []registry.Pair{{Key: "policy:a", Value: []byte("a")}}); out != nil {
		t.Fatal(out)
	}
	out := w.store.Put(ctx, []registry.Pair{{Key: "policy:b", Value: []byte("b")}})
	wantRateLimit(t, out["policy:b"], registrytest.Epoch.Add(time.Minute))
	rec := registry.Recording(ctx)
	for i := range cloudflare.RecordMargin {
		if out := w.store.Put(rec, []registry.Pair{{Key: fmt.Sprintf("metadata:sync:run:%d", i), Value: []byte("r")}}); out != nil {
			t.Fatalf("record write %d: %v, want it past the window", i+1, out)
		}
	}
	out = w.store.Put(rec, []registry.Pair{{Key: registry.LastRunKey, Value: []byte("r")}})
	wantRateLimit(t, out[registry.LastRunKey], registrytest.Epoch.Add(time.Minute))
	if got := w.sleeps(); len(got) != 0 {
		t.Errorf("waited %v past the deadline", got)
	}
}
