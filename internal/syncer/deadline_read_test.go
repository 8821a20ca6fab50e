package syncer_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare"
	"github.com/knue/syncjob/internal/registry/registrytest"
	"github.com/knue/syncjob/internal/syncer"
)

// slowReads is a Source that reads the first half of the files it is asked
// for, then nothing more until its context ends: a read that would outlast
// the run's deadline.
type slowReads struct{ syncer.Source }

func (s slowReads) Titles(ctx context.Context, commit string, files []policy.File, maxSize int64) (map[string]policy.Content, map[string]error, error) {
	got, failed, err := s.Source.Titles(ctx, commit, files[:len(files)/2], maxSize)
	if err != nil {
		return got, failed, err
	}
	<-ctx.Done()
	return got, failed, ctx.Err()
}

// A run whose reads alone would outlast its deadline stops reading at its
// cutoff, writes what it read, and ends partial naming the rest (not
// failures); the next run reads and writes only the rest: every policy
// entry is written once over both runs.
func TestDeadline_ReadsOutlastIt_WritesWhatWasRead_NextRunTheRest(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	seedMany(r, 12)
	src := r.s.Source
	r.s.Source = slowReads{src}
	ctx, cancel := context.WithTimeout(context.Background(), 900*time.Millisecond)
	defer cancel()
	res, err := r.s.Run(ctx, syncer.Options{StopBefore: 50 * time.Millisecond})
	sum := res.Summary
	if !errors.Is(err, syncer.ErrPartial) || sum.Status != policy.RunPartial || !sum.StoppedEarly {
		t.Fatalf("err = %v, status %s, stopped early %v; want partial, stopped early", err, sum.Status, sum.StoppedEarly)
	}
	if sum.Added != 6 || sum.Waiting != 6 || len(sum.Failures) != 0 || len(sum.WaitingNames) != 6 || !strings.Contains(err.Error(), sum.WaitingNames[0]) {
		t.Errorf("added %d, waiting %d %q, failures %v: want 6 written, the 6 unread waiting by name, none failed", sum.Added, sum.Waiting, sum.WaitingNames, sum.Failures)
	}
	if lc := r.lastCommit(); lc != "" {
		t.Errorf("lastCommit %q advanced past policies that wait", lc)
	}
	r.clock.Advance(time.Hour)
	r.s.Source = src
	res = r.mustRun()
	if res.Summary.Added != 6 || len(r.policies()) != 12 {
		t.Errorf("the next run added %d, the registry holds %d; want the 6 left, 12", res.Summary.Added, len(r.policies()))
	}
	puts := map[string]int{}
	for _, c := range r.store.Log() {
		if c.Method != registrytest.Put {
			continue
		}
		for _, k := range c.Keys {
			if strings.HasPrefix(k, registry.PolicyPrefix) {
				puts[k]++
			}
		}
	}
	for k, n := range puts {
		if n != 1 {
			t.Errorf("%s written %d times, want once", k, n)
		}
	}
	if len(puts) != 12 || !slices.IsSorted(sum.WaitingNames) {
		t.Errorf("%d policy keys written, waiting names %q: want 12, sorted", len(puts), sum.WaitingNames)
	}
}

// A run whose writes Cloudflare's rate window stops (it would let them go
// only after the run's deadline) still records itself partial, naming what
// waits: the record goes beyond the window (registry.Recording); the next
// run continues, and every policy entry is written once.
func TestDeadline_RateWindowStopsTheWrites_RunStillRecordedPartial(t *testing.T) {
	t.Parallel()
	const n = 30
	// The window keeps real time here, as the deadline does (the rig's
	// clock is a test's).
	r := newCFRig(t, n, func(c *cloudflare.Config) { c.RequestsPerWindow, c.Now = 9, time.Now })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opt := syncer.Options{BatchSize: 5, Concurrency: 1}
	res, err := r.run(ctx, opt)
	if sum := res.Summary; !errors.Is(err, syncer.ErrPartial) || sum.Status != policy.RunPartial || !sum.StoppedEarly || sum.Waiting == 0 {
		t.Fatalf("err = %v, status %s, stopped early %v, waiting %d; want partial, stopped early, writes waiting", err, sum.Status, sum.StoppedEarly, sum.Waiting)
	}
	if got := r.lastRun(); got.Status != policy.RunPartial || got.RunID != res.Summary.RunID {
		t.Errorf("lastRun %s of %s: want this run's, partial", got.Status, got.RunID)
	}
	// the next run is another process: a window of its own
	st, err := cloudflare.New(cloudflare.Config{AccountID: "account", NamespaceID: "namespace", APIToken: "token", BaseURL: r.cf.BaseURL(),
		HTTPClient: &http.Client{Transport: r.bulk}, Now: r.clock.Now, Sleep: r.clock.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	r.s.Registry = registry.New(st)
	res, err = r.run(context.Background(), opt)
	if err != nil || res.Summary.Status != policy.RunSuccess {
		t.Fatalf("the next run: %v, %s", err, res.Summary.Status)
	}
	checkWrittenOnce(t, r.bulk.landings(), n, 2)
	checkAnnouncedFirst(t, r.bulk.landings())
}
