package retry_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/retry"
)

var (
	errTransient = errors.New("transient")
	errFinal     = errors.New("final")
)

// classify retries errTransient, and asks for 7s after a *serverWait.
func classify(err error) retry.Decision {
	var sw *serverWait
	if errors.As(err, &sw) {
		return retry.Decision{Retry: true, After: sw.d}
	}
	return retry.Decision{Retry: errors.Is(err, errTransient)}
}

type serverWait struct{ d time.Duration }

func (e *serverWait) Error() string { return "server asks to wait " + e.d.String() }

// sleeps records the waits instead of sleeping.
type sleeps []time.Duration

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	*s = append(*s, d)
	return ctx.Err()
}

// failing returns a try that fails with errs in turn, then succeeds with
// "ok"; *calls counts the tries.
func failing(calls *int, errs ...error) func(context.Context) (string, error) {
	return func(context.Context) (string, error) {
		*calls++
		if *calls <= len(errs) {
			return "", errs[*calls-1]
		}
		return "ok", nil
	}
}

func fixedPolicy(s *sleeps, waits ...time.Duration) retry.Policy {
	return retry.Policy{MaxRetries: len(waits), Wait: retry.Fixed(waits), Classify: classify, Sleep: s.sleep}
}

func TestDo_TransientThenSuccess_WaitsTheSchedule(t *testing.T) {
	t.Parallel()
	var s sleeps
	calls := 0
	v, err := retry.Do(t.Context(), fixedPolicy(&s, time.Second, 2*time.Second, 4*time.Second), failing(&calls, errTransient, errTransient))
	if err != nil || v != "ok" {
		t.Fatalf("Do = %q, %v; want ok", v, err)
	}
	if calls != 3 {
		t.Errorf("tries = %d, want 3", calls)
	}
	if diff := cmp.Diff(sleeps{time.Second, 2 * time.Second}, s); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
}

func TestDo_FinalError_NotRetried(t *testing.T) {
	t.Parallel()
	var s sleeps
	calls := 0
	_, err := retry.Do(t.Context(), fixedPolicy(&s, time.Second), failing(&calls, errFinal))
	if !errors.Is(err, errFinal) {
		t.Fatalf("Do = %v, want errFinal", err)
	}
	if calls != 1 || len(s) != 0 {
		t.Errorf("tries = %d, waits = %v; want 1 try, no wait", calls, s)
	}
}

func TestDo_TransientForever_LastErrorAfterBoundedTries(t *testing.T) {
	t.Parallel()
	var s sleeps
	calls := 0
	last := errors.Join(errTransient, errors.New("last"))
	_, err := retry.Do(t.Context(), fixedPolicy(&s, time.Second, time.Second), failing(&calls, errTransient, errTransient, last, errTransient))
	if err != last {
		t.Fatalf("Do = %v, want the last try's error itself", err)
	}
	if calls != 3 || len(s) != 2 {
		t.Errorf("tries = %d, waits = %v; want 3 tries (1 + MaxRetries), 2 waits", calls, s)
	}
}

func TestDo_NoRetries_OneTry(t *testing.T) {
	t.Parallel()
	var s sleeps
	calls := 0
	if _, err := retry.Do(t.Context(), fixedPolicy(&s), failing(&calls, errTransient)); !errors.Is(err, errTransient) {
		t.Fatalf("Do = %v, want errTransient", err)
	}
	if calls != 1 || len(s) != 0 {
		t.Errorf("tries = %d, waits = %v; want 1 try, no wait", calls, s)
	}
}

func TestDo_RetryAfter_OverridesScheduleForThatRetry(t *testing.T) {
	t.Parallel()
	var got []retry.Retry
	p := retry.Policy{
		MaxRetries: 3,
		Wait: func(n int, after time.Duration) time.Duration {
			if after > 0 {
				return after
			}
			return time.Duration(n+1) * time.Second
		},
		Classify: classify,
		Sleep:    (&sleeps{}).sleep,
		OnRetry:  func(_ context.Context, r retry.Retry) { got = append(got, r) },
	}
	calls := 0
	sw := &serverWait{d: 7 * time.Second}
	if _, err := retry.Do(t.Context(), p, failing(&calls, errTransient, sw, errTransient)); err != nil {
		t.Fatal(err)
	}
	want := []retry.Retry{
		{N: 1, Wait: time.Second, Err: errTransient, Decision: retry.Decision{Retry: true}},
		{N: 2, Wait: 7 * time.Second, Err: sw, Decision: retry.Decision{Retry: true, After: 7 * time.Second}},
		{N: 3, Wait: 3 * time.Second, Err: errTransient, Decision: retry.Decision{Retry: true}},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
		t.Errorf("retries (-want +got):\n%s", diff)
	}
}

func TestDo_SleepError_StopsWithIt(t *testing.T) {
	t.Parallel()
	calls := 0
	p := fixedPolicy(&sleeps{}, time.Second, time.Second)
	p.Sleep = func(context.Context, time.Duration) error { return context.Canceled }
	if _, err := retry.Do(t.Context(), p, failing(&calls, errTransient, errTransient)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Do = %v, want context.Canceled", err)
	}
	if calls != 1 {
		t.Errorf("tries = %d, want 1", calls)
	}
}

func TestDo_ContextEndsDuringTry_ContextErrorNotRetried(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	var s sleeps
	calls := 0
	try := func(context.Context) (string, error) {
		calls++
		cancel()
		return "", errTransient
	}
	if _, err := retry.Do(ctx, fixedPolicy(&s, time.Second), try); !errors.Is(err, context.Canceled) {
		t.Fatalf("Do = %v, want context.Canceled", err)
	}
	if calls != 1 || len(s) != 0 {
		t.Errorf("tries = %d, waits = %v; want 1 try, no wait", calls, s)
	}
}

func TestDo_ContextDoneBefore_NoTry(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	calls := 0
	if _, err := retry.Do(ctx, fixedPolicy(&sleeps{}, time.Second), failing(&calls)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Do = %v, want context.Canceled", err)
	}
	if calls != 0 {
		t.Errorf("tries = %d, want 0", calls)
	}
}

func TestDo_NilSleep_WaitsForReal(t *testing.T) {
	t.Parallel()
	p := retry.Policy{MaxRetries: 1, Wait: retry.Fixed([]time.Duration{time.Millisecond}), Classify: classify}
	calls := 0
	if v, err := retry.Do(t.Context(), p, failing(&calls, errTransient)); err != nil || v != "ok" {
		t.Fatalf("Do = %q, %v; want ok", v, err)
	}
}

func TestSleep_ContextCancelled_StopsWaiting(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- retry.Sleep(ctx, time.Hour) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Sleep = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Sleep did not stop when its context was cancelled")
	}
}

func TestSleep_Elapsed_Nil(t *testing.T) {
	t.Parallel()
	if err := retry.Sleep(t.Context(), time.Millisecond); err != nil {
		t.Errorf("Sleep = %v, want nil", err)
	}
	if err := retry.Sleep(t.Context(), 0); err != nil {
		t.Errorf("Sleep(0) = %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := retry.Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep(0) with a cancelled context = %v, want context.Canceled", err)
	}
}

func TestJittered_DoublesToMax_DrawnInHalfToFull(t *testing.T) {
	t.Parallel()
	wait := retry.Jittered(time.Second, 30*time.Second, rand.New(rand.NewPCG(1, 2)))
	for n, d := range []time.Duration{1, 2, 4, 8, 16, 30, 30, 30} {
		d *= time.Second
		for range 50 {
			if got := wait(n, 0); got < d/2 || got > d {
				t.Fatalf("retry %d waits %s, want in [%s, %s]", n, got, d/2, d)
			}
		}
	}
	if got := wait(100, 0); got < 15*time.Second || got > 30*time.Second {
		t.Errorf("retry 100 waits %s, want in [15s, 30s]", got)
	}
}

func TestJittered_ServerWait_PlusAtMostATenth(t *testing.T) {
	t.Parallel()
	wait := retry.Jittered(time.Second, 30*time.Second, rand.New(rand.NewPCG(1, 2)))
	for range 100 {
		if got := wait(0, 7*time.Second); got < 7*time.Second || got > 7700*time.Millisecond {
			t.Fatalf("wait = %s, want in [7s, 7.7s]", got)
		}
	}
}

func TestJittered_SameSeed_SameWaits(t *testing.T) {
	t.Parallel()
	a := retry.Jittered(time.Second, 30*time.Second, rand.New(rand.NewPCG(3, 4)))
	b := retry.Jittered(time.Second, 30*time.Second, rand.New(rand.NewPCG(3, 4)))
	for n := range 10 {
		if x, y := a(n, 0), b(n, 0); x != y {
			t.Fatalf("retry %d: %s and %s from the same seed", n, x, y)
		}
	}
}

func TestAt_SecondsAndHTTPDate(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 1, 16, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		v    string
		want time.Time
		ok   bool
	}{
		{"7", now.Add(7 * time.Second), true},
		{"0", now, true},
		{now.Add(time.Minute).Format(http.TimeFormat), now.Add(time.Minute), true},
		{"", time.Time{}, false},
		{"soon", time.Time{}, false},
		{"1.5", time.Time{}, false},
	} {
		got, ok := retry.At(tc.v, now)
		if ok != tc.ok || !got.Equal(tc.want) {
			t.Errorf("At(%q) = %s, %v; want %s, %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
}

func TestAfter_FutureOnly(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 1, 16, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"7":   7 * time.Second,
		"0":   0,
		"-3":  0,
		"":    0,
		"bad": 0,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Hour).Format(http.TimeFormat):       0,
	} {
		if got := retry.After(v, now); got != want {
			t.Errorf("After(%q) = %s, want %s", v, got, want)
		}
	}
}

func TestDo_WaitPastDeadline_LastErrorAtOnce(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
	defer cancel()
	var s sleeps
	var heard []retry.Retry
	p := fixedPolicy(&s, 2*time.Hour)
	p.OnRetry = func(_ context.Context, r retry.Retry) { heard = append(heard, r) }
	calls := 0
	sw := &serverWait{d: 2 * time.Hour}
	_, err := retry.Do(ctx, p, failing(&calls, sw))
	if !errors.Is(err, sw) || err.Error() != sw.Error() {
		t.Fatalf("Do = %v, want the try's own error, not the context's", err)
	}
	// and it says the deadline cut it, with the wait the retry wanted
	if cut := (*retry.PastDeadline)(nil); !errors.As(err, &cut) || cut.Wait != 2*time.Hour {
		t.Errorf("Do = %#v, want a *retry.PastDeadline of 2h", err)
	}
	if calls != 1 || len(s) != 0 || len(heard) != 0 {
		t.Errorf("tries = %d, waits = %v, retries heard = %d; want 1 try, no wait, none heard", calls, s, len(heard))
	}
}

func TestDo_WaitWithinDeadline_Waits(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
	defer cancel()
	var s sleeps
	calls := 0
	if _, err := retry.Do(ctx, fixedPolicy(&s, time.Minute), failing(&calls, errTransient)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sleeps{time.Minute}, s); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
}
