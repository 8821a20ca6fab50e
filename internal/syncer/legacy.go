package syncer

import (
	"maps"
	"slices"
	"time"

	"github.com/knue/syncjob/internal/policy"
)

// legacyKeep is how long legacy v1 fields stay in an entry after they were
// carried over (DESIGN.md "Registry schema").
const legacyKeep = 90 * 24 * time.Hour

// splitV1 separates the legacy v1 entries (keyed policy:{title}, no sha)
// from the current ones. Only current entries take part in planning: a v1
// key is not a policy of the repository, and is never deleted as one.
func splitV1(all map[string]policy.Entry) (current, v1 map[string]policy.Entry) {
	current, v1 = map[string]policy.Entry{}, map[string]policy.Entry{}
	for key, e := range all {
		if e.IsV1() {
			v1[key] = e
		} else {
			current[key] = e
		}
	}
	return current, v1
}

// migrate carries the fields of each v1 entry into the entry of the same
// title and removes the v1 key (unless it is that entry's own key). Entries
// written by this run match on the title just read; on a full run the
// unchanged entries match too, and entries whose legacy fields expired are
// rewritten without them. A v1 entry that matches no title is kept and
// reported: its fields are not ours to lose.
func (r *run) migrate(plan policy.Plan, entries, v1 map[string]policy.Entry, full bool) policy.Plan {
	if len(v1) == 0 && !full {
		return plan
	}
	byTitle := map[string]string{}
	for key, e := range v1 {
		title := e.Title
		if title == "" {
			title = key
		}
		byTitle[title] = key
	}
	r.carry = map[string]policy.Entry{}
	matched := map[string]string{} // v1 key → policyName that took its fields
	planned := map[string]bool{}
	for _, it := range plan.Items {
		planned[it.PolicyName] = true
		if it.Action == policy.ActDelete {
			continue
		}
		if key, ok := byTitle[it.Title]; ok {
			r.carry[it.PolicyName] = v1[key]
			matched[key] = it.PolicyName
		}
	}
	if full {
		for _, name := range slices.Sorted(maps.Keys(entries)) {
			e := entries[name]
			if planned[name] {
				continue
			}
			key, ok := byTitle[e.Title]
			if ok {
				r.carry[name] = v1[key]
				matched[key] = name
			}
			if ok || r.legacyExpired(e) || (e.HasLegacy() && e.LegacyUntil == "") {
				plan.Items = append(plan.Items, policy.Item{Action: policy.ActMigrate, PolicyName: name, Path: e.Path, SHA: e.SHA, Title: e.Title})
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(v1)) {
		name, ok := matched[key]
		switch {
		case !ok:
			r.log.Warn("legacy entry matches no policy title", KeyKey, policy.PolicyPrefix+key)
		case name == key, planned[key]:
			// the v1 key is a policy name this run writes: the put replaces it
		default:
			plan.Items = append(plan.Items, policy.Item{Action: policy.ActMigrate, PolicyName: key, OldPath: "v1 entry, fields moved to " + policy.PolicyPrefix + name})
		}
	}
	return plan
}

// legacyExpired reports whether e's legacy fields have had their 90 days.
func (r *run) legacyExpired(e policy.Entry) bool {
	if !e.HasLegacy() || e.LegacyUntil == "" {
		return false
	}
	until, err := time.Parse(time.RFC3339, e.LegacyUntil)
	return err == nil && !r.start.Before(until)
}

// withLegacy returns e as it is written now: carrying the fields of its v1
// entry (for 90 days from the first time), or without them once expired.
func (r *run) withLegacy(e policy.Entry) policy.Entry {
	if c, ok := r.carry[e.PolicyName]; ok {
		e.FileNo, e.PreviewURL, e.DownloadURL = c.FileNo, c.PreviewURL, c.DownloadURL
	}
	switch {
	case r.legacyExpired(e):
		e.FileNo, e.PreviewURL, e.DownloadURL, e.LegacyUntil = "", "", "", ""
	case e.HasLegacy() && e.LegacyUntil == "":
		e.LegacyUntil = r.start.Add(legacyKeep).Format(timeLayout)
	case !e.HasLegacy():
		e.LegacyUntil = ""
	}
	return e
}
