package differ

import (
	"errors"

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
	var failures []policy.Failure
	items := make([]policy.Item, 0, len(plan.Items))
	plan.Skipped = append([]policy.Skip{}, plan.Skipped...)
	for _, it := range plan.Items {
		switch it.Action {
		case policy.ActMove:
			it.Title = entries[it.PolicyName].Title
		case policy.ActAdd, policy.ActUpdate:
			c, ok := read[it.Path]
			if !ok {
				err := readErrs[it.Path]
				if err == nil {
					err = errNotReturned
				}
				failures = append(failures, policy.Failure{PolicyName: it.PolicyName, Error: "read content: " + err.Error()})
				continue
			}
			if reason := opt.SkipReason(it.PolicyName, c.Size); reason != "" {
				plan.Skipped = append(plan.Skipped, policy.Skip{PolicyName: it.PolicyName, Path: it.Path, Reason: reason})
				continue
			}
			it.Title = c.Title
		}
		items = append(items, it)
	}
	plan.Items = items
	return plan, failures
}

// Unread returns the files whose content the plan needs: every add and
// update (a move keeps its title, a delete needs none), with the size
// desired says the tree gave (-1 when unknown), so that a file known to be
// too large is not downloaded.
func Unread(plan policy.Plan, desired map[string]policy.Desired) []policy.File {
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
		if d, ok := desired[it.PolicyName]; ok && d.Path == it.Path && d.SHA == it.SHA && d.Size > 0 {
			size = d.Size
		}
		files = append(files, policy.File{Path: it.Path, SHA: it.SHA, Size: size})
	}
	return files
}
