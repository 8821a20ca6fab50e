package differ

import (
	"slices"
	"strings"

	"github.com/knue/syncjob/internal/policy"
)

// Titling completes a plan's items in their own array as a read delivers
// each file (Put), then drops what cannot be written (Done): no second
// array of titled items beside the planned ones and no map of titles by
// path (200,000 policies: 21 MB and 12 MB held where a first sync's heap
// peaked, docs/bench.md). It writes the plan's items: the caller lets go
// of the plan it gave.
type Titling struct {
	items []policy.Item
	// byPath are the indexes of the adds and updates, sorted by path, so a
	// file read is found by binary search.
	byPath []int32
	got    []bool         // by item: a title was put
	skips  map[int]string // by item: why its content is not written
	late   []bool         // by item: left for the next run (LeaveUnreached); nil: none
	opt    Options
}

// NewTitling starts completing plan's items.
func NewTitling(plan policy.Plan, opt Options) *Titling {
	t := &Titling{items: plan.Items, got: make([]bool, len(plan.Items)), opt: opt}
	for i, it := range plan.Items {
		if it.Action == policy.ActAdd || it.Action == policy.ActUpdate {
			t.byPath = append(t.byPath, int32(i))
		}
	}
	slices.SortFunc(t.byPath, func(a, b int32) int { return strings.Compare(t.items[a].Path, t.items[b].Path) })
	return t
}

// Put takes what was read of the file at path: the title of every add and
// update of that path, or a skip when its content is empty or too large.
// Paths no item reads are ignored. Not safe for concurrent use.
func (t *Titling) Put(path string, c policy.Content) {
	i, _ := slices.BinarySearchFunc(t.byPath, path, func(j int32, p string) int { return strings.Compare(t.items[j].Path, p) })
	for ; i < len(t.byPath) && t.items[t.byPath[i]].Path == path; i++ {
		j := int(t.byPath[i])
		t.got[j] = true
		if reason := t.opt.SkipReason(t.items[j].PolicyName, c.Size); reason != "" {
			if t.skips == nil {
				t.skips = map[int]string{}
			}
			t.skips[j] = reason
			continue
		}
		t.items[j].Title = c.Title
	}
}

// Done is the plan with its titles, as WithContent says: a move keeps the
// title the registry has (entries), a skipped file leaves the items for
// plan.Skipped, and an add or update never put fails (with readErrs' error
// for its path, else "content not returned"). unread are those failed
// items as planned. plan is the plan NewTitling was given.
func (t *Titling) Done(plan policy.Plan, readErrs map[string]error, entries map[string]policy.Entry) (titled policy.Plan, failures []policy.Failure, unread []policy.Item) {
	plan.Skipped = append([]policy.Skip{}, plan.Skipped...)
	items := t.items[:0]
	for i, it := range t.items {
		switch {
		case t.late != nil && t.late[i]:
			continue
		case it.Action == policy.ActMove:
			it.Title = entries[it.PolicyName].Title
		case it.Action != policy.ActAdd && it.Action != policy.ActUpdate:
		case !t.got[i]:
			err := readErrs[it.Path]
			if err == nil {
				err = errNotReturned
			}
			failures = append(failures, policy.Failure{PolicyName: it.PolicyName, Error: "read content: " + err.Error()})
			unread = append(unread, it)
			continue
		case t.skips[i] != "":
			plan.Skipped = append(plan.Skipped, policy.Skip{PolicyName: it.PolicyName, Path: it.Path, Reason: t.skips[i]})
			continue
		}
		items = append(items, it)
	}
	clear(t.items[len(items):]) // let go of the strings of what was dropped
	plan.Items = items
	return plan, failures, unread
}

// LeaveUnreached takes out of the plan, for the next run, the adds and
// updates the read reached neither way — never put, and without an error
// of their own in readErrs: a read its run's deadline cut short. They are
// not failures (nothing went wrong with them) but writes the next run plans
// again from the registry as it is. When any is left, the plan's deletes
// are left with them: a delete's content may live on under a name whose
// add was not reached (a rename), and without that add the guard would
// count it lost and the registry would miss it until the next run. Done
// then leaves them all out. It returns their names, in plan order; none
// when every file was reached.
func (t *Titling) LeaveUnreached(readErrs map[string]error) []string {
	unreached := func(i int) bool {
		it := t.items[i]
		if it.Action != policy.ActAdd && it.Action != policy.ActUpdate || t.got[i] {
			return false
		}
		_, failed := readErrs[it.Path]
		return !failed
	}
	if !slices.ContainsFunc(t.byPath, func(i int32) bool { return unreached(int(i)) }) {
		return nil
	}
	t.late = make([]bool, len(t.items))
	var names []string
	for i, it := range t.items {
		if unreached(i) || it.Action == policy.ActDelete {
			t.late[i] = true
			names = append(names, it.PolicyName)
		}
	}
	return names
}
