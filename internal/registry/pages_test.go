package registry_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// pagedStore lists only page by page, as Cloudflare can: its List fails,
// so a read that would hold the whole listing at once fails.
type pagedStore struct {
	registry.Store // nil: no other method is called
	pages          [][]registry.Item
}

func (p pagedStore) List(context.Context, string) ([]registry.Item, error) {
	return nil, errors.New("pagedStore: List holds the whole listing")
}

func (p pagedStore) ListPages(_ context.Context, _ string, page func([]registry.Item) error) error {
	for _, items := range p.pages {
		if err := page(items); err != nil {
			return err
		}
	}
	return nil
}

func queued(name, sha string) registry.Item {
	pair := registry.QueuePair(policy.QueueEntry{PolicyName: name, SHA: sha, Operation: policy.OpAdd, CreatedAt: "2026-11-26T16:00:00Z"})
	return registry.Item{Key: pair.Key, Metadata: pair.Metadata}
}

// A full run's queue listing is read a page at a time and kept as a
// sorted slice whose strings are not the listed keys.
func TestQueueVersions_PageByPage_SortedOnceEach_KeysNotHeld(t *testing.T) {
	t.Parallel()
	pages := [][]registry.Item{
		{queued("학칙", "b1"), queued("a", "a1")},
		{queued("c d", "c1"), queued("학칙", "b2")},
	}
	got, err := registry.New(pagedStore{pages: pages}).QueueVersions(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []policy.Queued{{PolicyName: "a", SHA: "a1"}, {PolicyName: "c d", SHA: "c1"}, {PolicyName: "학칙", SHA: "b2"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("QueueVersions (-want +got):\n%s", diff)
	}
	for _, q := range got {
		for _, page := range pages {
			for _, it := range page {
				if within(q.PolicyName, it.Key) {
					t.Errorf("name %q is a slice of the listed key %q: the listing's keys stay held", q.PolicyName, it.Key)
				}
			}
		}
	}
	left, err := registry.New(pagedStore{pages: pages}).QueueVersions(t.Context(), func(q policy.Queued) bool { return q.PolicyName != "c d" })
	if diff := cmp.Diff([]policy.Queued{{PolicyName: "c d", SHA: "c1"}}, left); err != nil || diff != "" {
		t.Errorf("QueueVersions leaving all but \"c d\" (-want +got):\n%s (err %v)", diff, err)
	}
	empty, err := registry.New(pagedStore{}).QueueVersions(t.Context(), nil)
	if err != nil || empty == nil {
		t.Errorf("QueueVersions of an empty queue = %v, %v; want an empty, non-nil slice (the queue was listed)", empty, err)
	}
}

// within reports whether s lies in the memory of key.
func within(s, key string) bool {
	if s == "" || key == "" {
		return false
	}
	p, k := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(key)))
	return p >= k && p < k+uintptr(len(key))
}

// A full run's policies are read a page at a time.
func TestPolicies_PageByPage(t *testing.T) {
	t.Parallel()
	a := policy.Entry{PolicyName: "a", Title: "A", Status: policy.StatusActive, SHA: "a1", Path: "x/a.md", LastUpdated: "2026-11-26T16:00:00Z"}
	b := policy.Entry{PolicyName: "학칙", Title: "학칙", Status: policy.StatusActive, SHA: "b1", Path: "학칙.md", LastUpdated: "2026-11-26T16:00:00Z"}
	item := func(e policy.Entry) registry.Item {
		pair := registry.PolicyPair(e)
		return registry.Item{Key: pair.Key, Metadata: pair.Metadata}
	}
	got, problems, err := registry.New(pagedStore{pages: [][]registry.Item{{item(a)}, {item(b)}}}).Policies(t.Context())
	if err != nil || problems != nil {
		t.Fatalf("Policies: problems %v, err %v", problems, err)
	}
	if diff := cmp.Diff(map[string]policy.Entry{"a": a, "학칙": b}, got); diff != "" {
		t.Errorf("Policies (-want +got):\n%s", diff)
	}
}

// A listed entry's strings are not the listed key's or metadata's, and the
// entries a run wrote at once share one lastUpdated.
func TestPolicies_StringsNotTheListing_OneLastUpdated(t *testing.T) {
	t.Parallel()
	var page []registry.Item
	for _, name := range []string{"a", "b", "학칙"} {
		pair := registry.PolicyPair(policy.Entry{PolicyName: name, Title: name, Status: policy.StatusActive, SHA: "0123456789abcdef0123456789abcdef01234567", Path: "x/" + name + ".md", LastUpdated: "2026-11-26T16:00:00Z"})
		page = append(page, registry.Item{Key: pair.Key, Metadata: pair.Metadata})
	}
	got, _, err := registry.New(pagedStore{pages: [][]registry.Item{page}}).Policies(t.Context())
	if err != nil || len(got) != len(page) {
		t.Fatalf("Policies = %d entries, %v; want %d", len(got), err, len(page))
	}
	var last *byte
	for key, e := range got {
		for _, it := range page {
			for _, s := range []string{key, e.PolicyName, e.Title, e.SHA, e.Path, e.LastUpdated} {
				if within(s, it.Key) || within(s, unsafe.String(&it.Metadata[0], len(it.Metadata))) {
					t.Errorf("%q is a slice of the listing of %q: the listing stays held", s, it.Key)
				}
			}
		}
		if !within(e.PolicyName, e.Path) {
			t.Errorf("%s: the name is a string of its own, not a slice of its path %q", key, e.Path)
		}
		if p := unsafe.StringData(e.LastUpdated); last != nil && p != last {
			t.Errorf("%s: lastUpdated is a string of its own, not the one of the entries before", key)
		} else {
			last = p
		}
	}
}

// A name listed twice keeps its last listing (as a map by name did), and
// a last listing that leave reports leaves nothing of the name: the repair
// would otherwise see the earlier listing and rewrite an announcement that
// is current (differ.RepairQueue requeues a queue entry whose sha is not
// its policy's).
func TestQueueVersions_RepeatedName_LastListingLeftOut_NoneKept(t *testing.T) {
	t.Parallel()
	pages := [][]registry.Item{
		{queued("a", "a1"), queued("학칙", "old")},
		{queued("학칙", "cur"), queued("z", "z1")},
	}
	current := func(q policy.Queued) bool { return q.SHA == "cur" }
	all, err := registry.New(pagedStore{pages: pages}).QueueVersions(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []policy.Queued
	for _, q := range all {
		if !current(q) {
			want = append(want, q)
		}
	}
	got, err := registry.New(pagedStore{pages: pages}).QueueVersions(t.Context(), current)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("QueueVersions leaving the current listings (-want +got), want the full listing less them:\n%s", diff)
	}
}

// A full run's listing takes an entry's path and sha from what the caller
// lends (the head tree) when they are equal to the listed ones, its name
// then a slice of that path; what it does not lend, or lends wrong, is
// copied.
func TestPoliciesSharing_TakesWhatShareHolds(t *testing.T) {
	t.Parallel()
	const sha1, sha2 = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	var page []registry.Item
	for _, e := range []struct{ name, sha string }{{"same", sha1}, {"edited", sha2}, {"absent", sha1}, {"lent wrong", sha1}} {
		pair := registry.PolicyPair(policy.Entry{PolicyName: e.name, Title: e.name, Status: policy.StatusActive, SHA: e.sha, Path: "x/" + e.name + ".md", LastUpdated: "2026-11-26T16:00:00Z"})
		page = append(page, registry.Item{Key: pair.Key, Metadata: pair.Metadata})
	}
	held := strings.Clone("x/same.md x/edited.md " + sha1) // what share lends is a slice of this one string
	same, edited, headSHA := held[0:9], held[10:21], held[22:]
	lend := map[string][2]string{
		"x/same.md":       {same, headSHA},
		"x/edited.md":     {edited, headSHA}, // the head's sha is not the listed one
		"x/lent wrong.md": {edited, headSHA}, // a wrong path: not taken
	}
	share := func(path, sha string) (string, string) {
		l, ok := lend[path]
		if !ok {
			return "", ""
		}
		return l[0], l[1]
	}
	got, _, err := registry.New(pagedStore{pages: [][]registry.Item{page}}).PoliciesSharing(t.Context(), share)
	if err != nil || len(got) != len(page) {
		t.Fatalf("PoliciesSharing = %d entries, %v; want %d", len(got), err, len(page))
	}
	for name, want := range map[string]struct{ path, sha, name bool }{
		"same":       {true, true, true},
		"edited":     {true, false, true},
		"absent":     {false, false, false},
		"lent wrong": {false, true, false},
	} {
		e := got[name]
		if e.PolicyName != name || e.Path != "x/"+name+".md" || (e.SHA != sha1 && e.SHA != sha2) {
			t.Errorf("%s: entry %+v", name, e)
		}
		if within(e.Path, held) != want.path || within(e.SHA, held) != want.sha || within(e.PolicyName, held) != want.name {
			t.Errorf("%s: path, sha, name lent: %v %v %v; want %v %v %v", name, within(e.Path, held), within(e.SHA, held), within(e.PolicyName, held), want.path, want.sha, want.name)
		}
	}
}
