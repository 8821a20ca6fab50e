package differ

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/knue/syncjob/internal/policy"
)

// LegacyKeep is how long legacy v1 fields stay in an entry after they were
// carried over.
const LegacyKeep = 90 * 24 * time.Hour

// SplitV1 separates the legacy v1 entries (keyed policy:{title}, no sha)
// from the current ones. Only current entries take part in planning: a v1
// key is not a policy of the repository, and is never deleted as one.
// current is all itself, the v1 entries taken out of it: a full run's
// listing is not held twice (docs/bench.md, "A full run's memory"). A nil
// all gives an empty current.
func SplitV1(all map[string]policy.Entry) (current, v1 map[string]policy.Entry) {
	if all == nil {
		all = map[string]policy.Entry{}
	}
	v1 = map[string]policy.Entry{}
	for key, e := range all {
		if e.IsV1() {
			v1[key] = e
			delete(all, key)
		}
	}
	return all, v1
}

// WithV1 is the v1 entries of a and b together (b's when both hold a key).
func WithV1(a, b map[string]policy.Entry) map[string]policy.Entry {
	if len(a) == 0 {
		return b
	}
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

// movedTo is how a v1 key's removal names the policy that took its
// fields (its Old.Path); CarrierOf reads it back.
const movedTo = "v1 entry, fields moved to policy:"

// CarrierOf is the policy that took the fields of the v1 key an item
// removes, if it is such a removal.
func CarrierOf(it policy.Item) (string, bool) {
	if it.Action != policy.ActMigrate || it.Path != "" {
		return "", false
	}
	return strings.CutPrefix(it.OldPath(), movedTo)
}

// Migration is what Migrate decided besides the plan's items.
type Migration struct {
	// Carry maps a policyName to the v1 entry whose legacy fields it takes.
	Carry map[string]policy.Entry
	// Unmatched are the v1 keys (without prefix) that match no policy
	// title: kept, and reported, since their fields are not ours to lose.
	Unmatched []string
}

// Migrate carries the fields of each v1 entry into the entry of the same
// title and removes the v1 key (unless it is that entry's own key). Entries
// the plan writes match on the title just read; on a full run the unchanged
// entries match too, and entries whose legacy fields expired (or never had
// an expiry) are rewritten (ActMigrate). A run that read only what it
// touches matches the unchanged entries it read to the v1 keys it read:
// a removal that failed is retried with the policy that took the fields
// (RecordFailures owes both). Call it once titles are read.
func Migrate(plan policy.Plan, entries, v1 map[string]policy.Entry, full bool, now time.Time) (policy.Plan, Migration) {
	if len(v1) == 0 && !full {
		return plan, Migration{}
	}
	m := newMigrator(v1)
	planned, puts := map[string]bool{}, map[string]bool{}
	for _, it := range plan.Items {
		planned[it.PolicyName] = true
		if it.Action != policy.ActDelete {
			puts[it.PolicyName] = true
			m.take(it.PolicyName, it.Title, entries[it.PolicyName].V1())
		}
	}
	plan.Items = slices.Clip(plan.Items) // appends copy; nothing else changes
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		e := entries[name]
		if planned[name] {
			continue
		}
		rewrite := false
		if full {
			rewrite = m.take(name, e.Title, e.V1()) || LegacyExpired(e, now) || (e.HasLegacy() && e.V1().LegacyUntil == "")
		} else {
			rewrite = m.take(name, e.Title, e.V1()) && !e.HasLegacy() // one that carries them already only needs the v1 key gone
		}
		if rewrite {
			plan.Items = append(plan.Items, policy.Item{Action: policy.ActMigrate, PolicyName: name, Path: e.Path, SHA: e.SHA, Title: e.Title})
		}
	}
	m.ownNames(puts)
	out := Migration{Carry: m.carry}
	for _, key := range slices.Sorted(maps.Keys(v1)) {
		name, ok := m.matched[key]
		switch {
		case !ok:
			out.Unmatched = append(out.Unmatched, key)
		case name == key, planned[key]:
			// the v1 key is a policy name this run writes: the put replaces it
		default:
			plan.Items = append(plan.Items, policy.Item{Action: policy.ActMigrate, PolicyName: key, Old: &policy.Old{Path: movedTo + name}})
		}
	}
	return plan, out
}

// ownNames gives a put of a v1 key's own name, which replaces that key's
// value, that key's fields, whatever its title matched; a v1 key its title
// matched instead is then no longer taken, and stays (review) — or, a put
// itself, takes its own in turn. A v1 key another policy took by its title
// keeps that carrier: no fields are carried twice (review).
func (m *migrator) ownNames(puts map[string]bool) {
	var work []string
	for _, key := range slices.Sorted(maps.Keys(m.v1)) {
		if took, ok := m.matched[key]; puts[key] && (!ok || took == key) {
			work = append(work, key)
		}
	}
	for len(work) > 0 {
		key := work[0]
		work = work[1:]
		for other, name := range m.matched {
			if name == key && other != key {
				delete(m.matched, other)
				if puts[other] {
					work = append(work, other)
				}
			}
		}
		m.carry[key], m.matched[key] = m.v1[key], key
	}
}

// migrator matches policies to v1 entries by title.
type migrator struct {
	v1      map[string]policy.Entry
	byTitle map[string]string       // title → v1 key
	carry   map[string]policy.Entry // policyName → v1 entry it takes
	matched map[string]string       // v1 key → policyName that took its fields
}

func newMigrator(v1 map[string]policy.Entry) *migrator {
	m := &migrator{v1: v1, byTitle: map[string]string{}, carry: map[string]policy.Entry{}, matched: map[string]string{}}
	for _, key := range slices.Sorted(maps.Keys(v1)) { // two keys of one title: the same one every run
		title := v1[key].Title
		if title == "" {
			title = key
		}
		if _, taken := m.byTitle[title]; !taken || key == title {
			m.byTitle[title] = key // a key that is its own title first
		}
	}
	return m
}

// take gives name, whose entry carries held, the fields of the v1 entry
// titled title, if there is one. Of two policies of one title the later
// takes them, and the earlier no longer carries them (review: both did),
// unless the earlier is the key's own name: its put replaces the key's
// value (review: the fields went to a later put, and were lost when only
// the first landed). An entry that carries other v1 fields already takes
// none: they would replace its own (review: of two v1 keys of one title,
// the second run gave the policy the other key's, and the first key's
// fileNo was lost); that key stays, unmatched.
func (m *migrator) take(name, title string, held policy.Legacy) bool {
	key, ok := m.byTitle[title]
	if ok && held.Carried() && !sameFields(held, m.v1[key].V1()) {
		return false
	}
	if ok {
		if prev, was := m.matched[key]; was && prev != name {
			if prev == key {
				return false // the put that replaces the key's own value keeps its fields (review)
			}
			delete(m.carry, prev)
		}
		m.carry[name] = m.v1[key]
		m.matched[key] = name
	}
	return ok
}

// sameFields reports whether a and b hold the same v1 fields.
func sameFields(a, b policy.Legacy) bool {
	return a.FileNo == b.FileNo && a.PreviewURL == b.PreviewURL && a.DownloadURL == b.DownloadURL
}

// LegacyExpired reports whether e's legacy fields have had their 90 days.
func LegacyExpired(e policy.Entry, now time.Time) bool { return expired(e.V1(), now) }

func expired(l policy.Legacy, now time.Time) bool {
	if !l.Carried() || l.LegacyUntil == "" {
		return false
	}
	until, err := time.Parse(time.RFC3339, l.LegacyUntil)
	return err == nil && !now.Before(until)
}

// WithLegacy returns e as it is written at now: carrying the fields of the
// v1 entry carry holds for it (for 90 days from the first time), or without
// them once expired. It sets e's v1 fields anew (policy.Entry.SetV1): the
// entry it was given, and any other copy, keep theirs.
func WithLegacy(e policy.Entry, carry map[string]policy.Entry, now time.Time) policy.Entry {
	l := e.V1()
	if c, ok := carry[e.PolicyName]; ok {
		cl := c.V1()
		l.FileNo, l.PreviewURL, l.DownloadURL = cl.FileNo, cl.PreviewURL, cl.DownloadURL
	}
	switch {
	case expired(l, now):
		l = policy.Legacy{}
	case l.Carried() && l.LegacyUntil == "":
		l.LegacyUntil = now.Add(LegacyKeep).UTC().Format(policy.TimeLayout)
	case !l.Carried():
		l.LegacyUntil = ""
	}
	e.SetV1(l)
	return e
}

// LegacyLeft are the v1 keys no policy has taken the fields of after a
// run: what Migrate found unmatched (mig) on a run that read every entry
// (last is then ignored); on one that read only what it touched (partial),
// the last run's unmatched keys (last) less those it read (v1) and matched
// now.
func LegacyLeft(partial bool, last []string, v1 map[string]policy.Entry, mig Migration) []string {
	if !partial {
		return append([]string{}, mig.Unmatched...)
	}
	var left []string
	for _, key := range last {
		if _, matched := v1[key]; !matched || slices.Contains(mig.Unmatched, key) {
			left = append(left, key)
		}
	}
	return left
}
