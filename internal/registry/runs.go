package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/knue/syncjob/internal/policy"
)

// runMetadata is the metadata of a run-history key: enough to find the last
// success and the day's billable writes from a listing, without values.
type runMetadata struct {
	Status         string `json:"status"`
	BillableWrites int64  `json:"billableWrites,omitempty"`
}

func runMetadataOf(s policy.RunSummary) json.RawMessage {
	return MustJSON(runMetadata{Status: s.Status, BillableWrites: s.BillableWrites})
}

// RunRef is one run of the history as a listing shows it.
type RunRef struct {
	Key            string
	At             time.Time // when the run started, from the key
	Status         string
	BillableWrites int64
}

// RunIndex lists the run history, newest first, without reading values on a
// backend whose listing carries metadata (a key recorded before metadata was
// added is read once).
func (r *Registry) RunIndex(ctx context.Context) ([]RunRef, error) {
	items, err := r.store.List(ctx, RunPrefix)
	if err != nil {
		return nil, fmt.Errorf("registry: read run history: %w", err)
	}
	refs := make([]RunRef, 0, len(items))
	for _, it := range items {
		at, ok := runTime(it.Key)
		if !ok {
			continue // not ours to interpret
		}
		ref := RunRef{Key: it.Key, At: at}
		var md runMetadata
		if len(it.Metadata) > 0 && json.Unmarshal(it.Metadata, &md) == nil && md.Status != "" {
			ref.Status, ref.BillableWrites = md.Status, md.BillableWrites
		} else {
			it, ok, err := r.fill(ctx, it)
			if err != nil {
				return nil, err
			}
			var s policy.RunSummary
			if !ok || decodeObject(it.Value, &s) != nil {
				continue
			}
			ref.Status, ref.BillableWrites = s.Status, s.BillableWrites
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// runTime reads the start of a run from its key (RunKey's inverted millis).
func runTime(key string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(key, RunPrefix)
	if !ok || len(rest) < 13 {
		return time.Time{}, false
	}
	inv, err := strconv.ParseInt(rest[:13], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(maxInvertedMillis - inv).UTC(), true
}

// RecordHistory writes only the run-history key of a run (expiring after
// RunTTL): for a run that must not replace lastRun, such as one that found
// another run holding the lease.
func (r *Registry) RecordHistory(ctx context.Context, s policy.RunSummary, at time.Time) error {
	ctx = Recording(ctx)
	if out := r.store.Put(ctx, []Pair{{Key: RunKey(at, s.RunID), Value: MustJSON(s), Metadata: runMetadataOf(s), TTL: RunTTL}}); out != nil {
		return &BatchError{Op: "record run history", Failed: out}
	}
	return nil
}

// RunReservation is the write of a run's history key RunKey(at, s.RunID)
// before the run ends, for a run that must be counted even if it never
// records its end: s says what it may have written (BillableWrites). The
// run's record (RecordRun) replaces it.
func RunReservation(s policy.RunSummary, at time.Time) Write {
	return Write{put: &Pair{Key: RunKey(at, s.RunID), Value: MustJSON(s), Metadata: runMetadataOf(s), TTL: RunTTL}}
}

// HistoryCost is what RecordHistory will be billed for on a backend that
// bills per write (0 on others).
func (r *Registry) HistoryCost() int64 {
	if !r.store.Usage().Billing {
		return 0
	}
	return 1
}

// RunByID returns the run of the history whose run id is id (one listing
// and one read); an error wrapping policy.ErrNotFound when the history holds
// none (it keeps 90 days).
func (r *Registry) RunByID(ctx context.Context, id string) (policy.RunSummary, error) {
	items, err := r.store.List(ctx, RunPrefix)
	if err != nil {
		return policy.RunSummary{}, fmt.Errorf("registry: read run history: %w", err)
	}
	for _, it := range items {
		if !strings.HasSuffix(it.Key, ":"+id) {
			continue
		}
		runs, err := r.runsOf(ctx, []string{it.Key})
		if err != nil {
			return policy.RunSummary{}, err
		}
		if len(runs) == 1 && runs[0].RunID == id {
			return runs[0], nil
		}
	}
	return policy.RunSummary{}, fmt.Errorf("registry: run %s: %w", id, policy.ErrNotFound)
}
