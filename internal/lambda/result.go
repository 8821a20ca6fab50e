package lambda

import "fmt"

// MaxResultList is how many entries of each list an invocation's result
// holds (the plan's items, skipped files, conflicts and held-back
// versions; the summary's skipped files, conflicts, failures, pending
// names, legacy titles and held-back versions); Truncated counts the rest.
// A synchronous invocation's response is at most 6 MB (Lambda's limit: a
// larger one fails the invocation instead of answering), and a plan item
// is about 223 bytes: a dry run over 50,000 policies would be 11 MB. At
// these sizes the lists take at most about 2 MB.
const MaxResultList = 1000

// maxResultBytes is the most a result is encoded to, under Lambda's 6 MB
// response limit with room to spare: a result whose first MaxResultList
// entries are larger still (long paths, titles or errors) lists fewer.
const maxResultBytes = 5 << 20

// Truncation says what an encoded result leaves out: its lists hold their
// first entries, and the counts (added, …, errorCount, unchanged) stay
// those of the whole run.
type Truncation struct {
	// Omitted counts, by the list's JSON path ("plan.items", "failures",
	// …), the entries not listed.
	Omitted map[string]int `json:"omitted"`
	// Full says where the whole lists are.
	Full string `json:"full"`
}

// MarshalJSON encodes the result within Lambda's response limit (see
// MaxResultList): every path that answers an invocation encodes it so.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result // the fields, without this method
	for limit := MaxResultList; ; limit /= 2 {
		b, err := marshalResult(plain(r.first(limit)))
		if err != nil || len(b) <= maxResultBytes || limit == 0 {
			return b, err
		}
	}
}

// first returns the result with at most limit entries in each list, and
// Truncated saying what it left out (nil when nothing).
func (r Result) first(limit int) Result {
	omitted := map[string]int{}
	s := &r.RunSummary
	s.Skipped = firstOf(s.Skipped, limit, "skipped", omitted)
	s.Conflicts = firstOf(s.Conflicts, limit, "conflicts", omitted)
	s.Failures = firstOf(s.Failures, limit, "failures", omitted)
	s.Pending = firstOf(s.Pending, limit, "pending", omitted)
	s.LegacyV1 = firstOf(s.LegacyV1, limit, "legacyV1", omitted)
	s.HeldBack = firstOf(s.HeldBack, limit, "heldBack", omitted)
	if r.Plan != nil {
		p := *r.Plan
		p.Items = firstOf(p.Items, limit, "plan.items", omitted)
		p.Skipped = firstOf(p.Skipped, limit, "plan.skipped", omitted)
		p.Conflicts = firstOf(p.Conflicts, limit, "plan.conflicts", omitted)
		p.HeldBack = firstOf(p.HeldBack, limit, "plan.heldBack", omitted)
		r.Plan = &p
	}
	r.Truncated = nil
	if len(omitted) > 0 {
		r.Truncated = &Truncation{Omitted: omitted, Full: r.fullAt()}
	}
	return r
}

// fullAt says where a result's whole lists are.
func (r Result) fullAt() string {
	if r.DryRun {
		return `the whole plan: syncjob sync --dry-run --json (--full for a full run's), or this invocation's "dry-run plan" log lines`
	}
	return fmt.Sprintf("the whole summary: syncjob runs show %s --json", r.RunID)
}

// firstOf returns the first limit entries of xs (xs itself, nil or not,
// when it has no more) and records in omitted, under field, how many it
// leaves out.
func firstOf[T any](xs []T, limit int, field string, omitted map[string]int) []T {
	if len(xs) <= limit {
		return xs
	}
	omitted[field] = len(xs) - limit
	return xs[:limit:limit]
}
