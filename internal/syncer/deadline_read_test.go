package syncer_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
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

// runStopped runs once with slowReads' reads and a deadline they outlast,
// so that the run stops for it, and moves the clock on an hour.
func (r *rig) runStopped(opt syncer.Options) (syncer.Result, error) {
	r.t.Helper()
	src := r.s.Source
	r.s.Source = slowReads{src}
	defer func() { r.s.Source = src }()
	ctx, cancel := context.WithTimeout(context.Background(), 900*time.Millisecond)
	defer cancel()
	opt.StopBefore = 50 * time.Millisecond
	res, err := r.s.Run(ctx, opt)
	r.clock.Advance(time.Hour)
	return res, err
}

// A run whose reads alone would outlast its deadline stops reading at its
// cutoff, writes what it read, and ends partial naming the rest (not
// failures); the next run reads and writes only the rest, without listing
// the queue (the stopped run recorded what it owes): every policy entry is
// written once over both runs.
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
	before := len(r.store.Log())
	res = r.mustRun()
	for _, c := range r.store.Log()[before:] {
		if c.Method == registrytest.List && c.Prefix == registry.QueuePrefix {
			t.Error("the next run listed the queue: the run its deadline stopped recorded what it owes (pending)")
		}
	}
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

// lateReads is a Source that streams what it reads (a TitleStreamer, as
// the GitHub source is) but delivers nothing for delay, then everything,
// and counts the reads asked of it: a stream that reaches the files it is
// asked for only late (an archive whose first part holds the files that
// landed before).
type lateReads struct {
	syncer.Source
	delay time.Duration
	reads *atomic.Int32
	// half: deliver the first half of the files only, then nothing more
	// until the context ends
	half bool
}

func (s lateReads) TitlesEach(ctx context.Context, commit string, files []policy.File, maxSize int64, _ func(string, []byte), put func(string, policy.Content)) (map[string]error, error) {
	s.reads.Add(1)
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if s.half {
		files = files[:len(files)/2]
	}
	got, failed, err := s.Source.Titles(ctx, commit, files, maxSize)
	for path, c := range got {
		put(path, c)
	}
	if s.half && err == nil {
		<-ctx.Done()
		err = context.Cause(ctx) // as the GitHub source's archive read ahead does
	}
	return failed, err
}

// A read that has reached none of its files by its cutoff reads on, on the
// same stream: asked again, it would start again from the beginning and
// reach no further before the deadline (at 200,000 policies, the third run
// of a first sync cut by MAX_DURATION=20s downloaded the archive twice and
// timed out). Here the files come after the cutoff and before the
// deadline: one read, and every file written.
func TestDeadline_NothingReachedByTheCutoff_ReadsOnTheSameStream(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	seedMany(r, 12)
	var reads atomic.Int32
	r.s.Source = lateReads{Source: r.s.Source, delay: 1400 * time.Millisecond, reads: &reads}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second) // the cutoff is 1.3 s away, at most
	defer cancel()
	res, err := r.s.Run(ctx, syncer.Options{StopBefore: 50 * time.Millisecond})
	if err != nil || res.Summary.Added != 12 {
		t.Errorf("run: %v, added %d; want success, the 12 read after the cutoff written", err, res.Summary.Added)
	}
	if n := reads.Load(); n != 1 {
		t.Errorf("the files were asked for %d times, want once: the read that reached none by the cutoff went on", n)
	}
}

// A read that reached none of its files by its cutoff, and then reaches
// some, is cut when it is looked at again (half the time then left): the
// run writes what it read in time and leaves the rest for the next run,
// instead of reading on until its deadline ends it with nothing written.
func TestDeadline_FilesReachedAfterTheCutoff_CutWhenLookedAtAgain(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	seedMany(r, 12)
	var reads atomic.Int32
	r.s.Source = lateReads{Source: r.s.Source, delay: 1400 * time.Millisecond, reads: &reads, half: true}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	res, err := r.s.Run(ctx, syncer.Options{StopBefore: 50 * time.Millisecond})
	if sum := res.Summary; !errors.Is(err, syncer.ErrPartial) || sum.Added != 6 || sum.Waiting != 6 || !sum.StoppedEarly {
		t.Errorf("run: %v, added %d, waiting %d, stopped early %v; want partial, the 6 read written, 6 waiting", err, sum.Added, sum.Waiting, sum.StoppedEarly)
	}
	if n := reads.Load(); n != 1 {
		t.Errorf("the files were asked for %d times, want once", n)
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

// A dry run shows the whole plan, deadline or not: it writes nothing, so
// it has nothing to leave for the next run, and a plan cut short would hide
// changes (a dry run is how an operator reviews what a run would do).
func TestDeadline_DryRun_ReadsOn_WholePlanShown(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	seedMany(r, 12)
	r.s.Source = slowReads{r.s.Source}
	ctx, cancel := context.WithTimeout(context.Background(), 900*time.Millisecond)
	defer cancel()
	res, err := r.s.Run(ctx, syncer.Options{DryRun: true, StopBefore: 50 * time.Millisecond})
	if err == nil && res.Summary.Status == policy.RunSuccess {
		t.Errorf("dry run whose reads outlast its deadline: success with %d of 12 changes; want the read to go on and the deadline to end it", len(res.Plan.Items))
	}
	if len(res.Plan.Items) == 6 && res.Summary.Waiting == 0 {
		t.Errorf("dry run shows 6 of 12 changes and nothing waiting: the cut hid the rest")
	}
}

// A read cut by the deadline leaves the plan's deletes for the next run
// with the adds it did not reach: a rename's new name may be among them,
// and then the guard would count the old name's content lost (refusing a
// rename of everything, run after run) or the registry would miss the
// policy until the next run.
func TestDeadline_ReadsCut_RenameOfEverything_NotRefused_NothingLost(t *testing.T) {
	t.Parallel()
	for _, full := range []bool{false, true} {
		t.Run(fmt.Sprintf("full=%v", full), func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			seedMany(r, 30)
			r.mustRun()
			for i := range 30 {
				r.repo.Move(fmt.Sprintf("규정/%02d.md", i), fmt.Sprintf("새/n%02d.md", i))
			}
			r.repo.Commit("rename all")
			src := r.s.Source
			r.s.Source = slowReads{src}
			ctx, cancel := context.WithTimeout(context.Background(), 900*time.Millisecond)
			res, err := r.s.Run(ctx, syncer.Options{Full: full, StopBefore: 50 * time.Millisecond})
			cancel()
			if sum := res.Summary; sum.Status != policy.RunPartial || sum.Deleted != 0 || !errors.Is(err, syncer.ErrPartial) {
				t.Fatalf("status %s, deleted %d, err %v; want partial, no delete while the new names wait", sum.Status, sum.Deleted, err)
			}
			if n := len(r.policies()); n < 30 {
				t.Errorf("%d policies in the registry after a cut rename of 30, want every one still there (old or new name)", n)
			}
			r.clock.Advance(time.Hour)
			r.s.Source = src
			r.mustRun()
			got := r.policies()
			if len(got) != 30 {
				t.Errorf("%d policies after the next run, want the 30 renamed", len(got))
			}
			for name := range got {
				if !strings.HasPrefix(name, "n") {
					t.Errorf("old name %q still in the registry after the next run", name)
				}
			}
		})
	}
}

// A run its deadline stopped records as pending only what failed in it, so
// the next run lists the queue: a retry the stopped run planned but left
// waiting keeps its count and goes on towards a dead letter.
func TestDeadline_StoppedRun_RetryLeftWaiting_KeepsItsCount(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	seedMany(r, 12)
	r.store.FailKeys(map[string]error{"policy:10": errors.New("boom"), "policy:11": errors.New("bang")})
	r.run(syncer.Options{})
	r.store.FailKeys(nil)
	r.runStopped(syncer.Options{})
	r.store.FailKeys(map[string]error{"policy:11": errors.New("bang")})
	r.run(syncer.Options{})
	if got := r.queueEntries()["11"].RetryCount; got != 2 {
		t.Errorf("queue:11 retryCount %d after its second failure, want 2", got)
	}
}
