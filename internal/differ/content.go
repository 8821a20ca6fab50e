package differ

import (
	"errors"
	"math"
	"slices"

	"github.com/knue/syncjob/internal/policy"
)

// errNotReturned fails a file the source neither read nor reported.
var errNotReturned = errors.New("content not returned")

// WithContent completes the plan with what was read of each add and update,
// by path: the title; a skip when the content turns out empty or too large
// (its registry entry is kept); a failure, never a delete, when it could not
// be read (readErrs, or missing from read). A move keeps the title the
// registry has (entries). The failures name each policy and why.
func WithContent(plan policy.Plan, read map[string]policy.Content, readErrs map[string]error, entries map[string]policy.Entry, opt Options) (policy.Plan, []policy.Failure) {
	plan.Items = slices.Clone(plan.Items) // its input is never written (a run uses Titling on its own plan)
	t := NewTitling(plan, opt)
	for path, c := range read {
		t.Put(path, c)
	}
	plan, failures, _ := t.Done(plan, readErrs, entries)
	return plan, failures
}

// Size writes into each add and update of plan, in place, the size desired
// says the head tree gave its file (when desired wants that path and sha),
// so that the files to read are known once desired is let go: at 200,000
// policies the desired policies (11 MB) and the files to read (8 MB) were
// held at once (docs/bench.md, "How we got here", "Memory, ninth pass").
func Size(plan policy.Plan, desired Desired) {
	for i := range plan.Items {
		it := &plan.Items[i]
		if it.Action != policy.ActAdd && it.Action != policy.ActUpdate {
			continue
		}
		if d, ok := desired.Get(it.PolicyName); ok && d.Path == it.Path && d.SHA == it.SHA && d.Size > 0 {
			it.TreeSize = int32(min(d.Size, math.MaxInt32))
		}
	}
}

// Unread returns the files whose content the plan needs: every add and
// update (a move keeps its title, a delete needs none), with the size the
// tree gave (Size; -1 when unknown), so that a file known to be too large
// is not downloaded.
func Unread(plan policy.Plan) []policy.File {
	n := 0
	for _, it := range plan.Items {
		if it.Action == policy.ActAdd || it.Action == policy.ActUpdate {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	files := make([]policy.File, 0, n) // read by a 50,000-policy first sync: not grown twice over
	for _, it := range plan.Items {
		if it.Action != policy.ActAdd && it.Action != policy.ActUpdate {
			continue
		}
		size := int64(-1)
		if it.TreeSize > 0 {
			size = int64(it.TreeSize)
		}
		files = append(files, policy.File{Path: it.Path, SHA: it.SHA, Size: size})
	}
	return files
}
