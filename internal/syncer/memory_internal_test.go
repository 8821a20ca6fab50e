package syncer

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/github"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// The GitHub source hands each title to the titles step as it reads it
// (TitleStreamer), which writes it into its plan item: no map of every
// title by path is held (200,000 policies: 12 MB).
var _ TitleStreamer = (*github.Source)(nil)

// TestTakeWrites_BatchKeepsNamesAndKeys_NotTheValues: a batch sent keeps
// what its outcome needs (each op's policy and key), not its writes, so that
// an encoded entry is let go once the store has put it in the request body
// (cloudflare's TestStore_Put_ValuesLetGoOnceInTheBody): at 10,000 a batch
// the entries were held twice while the request was sent.
func TestTakeWrites_BatchKeepsNamesAndKeys_NotTheValues(t *testing.T) {
	t.Parallel()
	batch := []op{
		newOp("학칙", registry.PutPolicy(policy.Entry{PolicyName: "학칙", SHA: "abc", Path: "학칙.md"})),
		newOp("학칙", registry.PutQueue(policy.QueueEntry{PolicyName: "학칙", SHA: "abc", Operation: policy.OpAdd})),
		newOp("규정", registry.DeletePolicy("규정")),
	}
	ws := takeWrites(batch)
	var keys, sent []string
	for i, o := range batch {
		keys = append(keys, o.name+" "+o.key)
		sent = append(sent, ws[i].Key())
		if o.w.Key() != "" || !o.w.IsDelete() { // every write held has its key; the zero Write has none
			t.Errorf("op %d still holds its write", i)
		}
	}
	want := []string{"학칙 policy:학칙", "학칙 queue:학칙", "규정 policy:규정"}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("ops' names and keys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"policy:학칙", "queue:학칙", "policy:규정"}, sent); diff != "" {
		t.Errorf("writes' keys (-want +got):\n%s", diff)
	}
}

// TestWithoutFailed_NothingFailed_ThePlanItself: the applied plan of a run
// where nothing failed is its plan, not a copy of every item; one where
// something failed is a copy without it, the plan left as it was.
func TestWithoutFailed_NothingFailed_ThePlanItself(t *testing.T) {
	t.Parallel()
	p := policy.Plan{Items: []policy.Item{{Action: policy.ActAdd, PolicyName: "a"}, {Action: policy.ActAdd, PolicyName: "b"}}}
	if got := withoutFailed(p, nil, nil); &got.Items[0] != &p.Items[0] || len(got.Items) != 2 {
		t.Errorf("nothing failed: items %v copied or changed", got.Items)
	}
	got := withoutFailed(p, []policy.Failure{{PolicyName: "a", Error: "x"}}, []string{"c"})
	if len(got.Items) != 1 || got.Items[0].PolicyName != "b" || p.Items[0].PolicyName != "a" || len(p.Items) != 2 {
		t.Errorf("a failed: got %v, plan now %v; want [b], the plan unchanged", got.Items, p.Items)
	}
}

// TestPlannedForTitles_DesiredLetGo: the titles step needs no desired
// policies (the items carry their files' sizes), and the mirror's plan
// step, the only other one that uses them, comes before it: the run lets
// them go before the files to read are listed, and hands none on.
func TestPlannedForTitles_DesiredLetGo(t *testing.T) {
	t.Parallel()
	p := planned{desired: differ.Desired{{PolicyName: "a"}}}
	q := p.forTitles()
	if p.desired != nil {
		t.Error("the run kept the desired policies")
	}
	if q.desired != nil {
		t.Error("the titles step got the desired policies")
	}
}

// TestPlan_TakesTheTreeOutOfTheRead: the plan step takes the head tree out
// of what the run read, so that nothing holds the tree's list of files once
// planning has grouped them by name (at 200,000 files it is 8.6 MB of the
// planning step's peak), and plans from it all the same, each item with its
// file's size, so that listing the files to read needs nothing else.
func TestPlan_TakesTheTreeOutOfTheRead(t *testing.T) {
	t.Parallel()
	r := &run{Syncer: &Syncer{}, opt: Options{}.withDefaults(), log: (&Syncer{}).logger()}
	in := readForPlan{mode: differ.ModeFull, tree: []policy.File{{Path: "a/x.md", SHA: "0123456789abcdef0123456789abcdef01234567", Size: 10}}}
	p := r.plan(state{}, &in)
	if in.tree != nil {
		t.Error("the run still holds the tree after planning")
	}
	if len(p.plan.Items) != 1 || p.plan.Items[0].PolicyName != "x" || p.plan.Items[0].Action != policy.ActAdd {
		t.Errorf("plan %+v, want x added", p.plan.Items)
	}
	if got := differ.Unread(p.plan); len(got) != 1 || got[0].Size != 10 {
		t.Errorf("files to read %+v, want x with the tree's size (10) from the planned items alone", got)
	}
}

// TestPlan_FullRun_NoMapBesideTheEntries: a full run plans from the
// registry's entries as listed, not from a map of their paths and shas
// made beside them (200,000 policies: some 15 MB, held with the entries
// and the tree where a full run's heap peaks; docs/bench.md, "A full run's
// memory"). Not parallel: it counts the bytes the plan step
// allocates.
func TestPlan_FullRun_NoMapBesideTheEntries(t *testing.T) {
	const n = 20000
	tree := make([]policy.File, n)
	entries := make(map[string]policy.Entry, n)
	for i := range tree {
		name := fmt.Sprintf("규정 %05d", i)
		tree[i] = policy.File{Path: "a/" + name + ".md", SHA: fmt.Sprintf("%040x", i), Size: 10}
		entries[name] = policy.Entry{PolicyName: name, SHA: tree[i].SHA, Path: tree[i].Path}
	}
	r := &run{Syncer: &Syncer{}, opt: Options{}.withDefaults(), log: (&Syncer{}).logger()}
	in := readForPlan{mode: differ.ModeFull, tree: tree, reg: registryState{entries: entries, size: n}}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	p := r.plan(state{}, &in)
	runtime.ReadMemStats(&after)
	if len(p.plan.Items) != 0 {
		t.Fatalf("plan of an unchanged registry has %d items", len(p.plan.Items))
	}
	// what the step must make: the desired policies (n of them) and little
	// else; a map of n names, paths and shas would be 1.3 MB more at least
	// (n slots of 64 bytes)
	got, desired := after.TotalAlloc-before.TotalAlloc, uint64(n*unsafe.Sizeof(policy.Desired{}))
	t.Logf("plan step allocated %d bytes for %d unchanged policies (desired: %d)", got, n, desired)
	if limit := desired + desired/4; got > limit {
		t.Errorf("plan step allocated %d bytes for %d unchanged policies, want at most %d (the desired policies and a quarter)", got, n, limit)
	}
}

// TestTreeStrings_LendsTheTreesOwn: once a full run's tree is read, the
// registry's listing is lent the tree's own path of a file it holds, and
// its sha when the listed one is that file's (registry.PoliciesSharing);
// nothing before the tree is read, nor for a path it does not hold.
func TestTreeStrings_LendsTheTreesOwn(t *testing.T) {
	t.Parallel()
	const sha1, sha2 = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	tree := []policy.File{
		{Path: strings.Clone("a/가.md"), SHA: strings.Clone(sha1)},
		{Path: strings.Clone("a/나.md"), SHA: strings.Clone(sha1)},
		{Path: strings.Clone("b/다.md"), SHA: strings.Clone(sha2)},
	}
	var shared treeStrings
	if p, h := shared.share("a/가.md", sha1); p != "" || h != "" {
		t.Errorf("before the tree is read: %q %q", p, h)
	}
	shared.lend(tree)
	same := func(a, b string) bool { return a == b && unsafe.StringData(a) == unsafe.StringData(b) }
	for _, c := range []struct {
		path, sha string
		file      int // the tree's file lent, -1: none
		sameSHA   bool
	}{
		{"a/가.md", sha1, 0, true},
		{"b/다.md", sha2, 2, true},
		{"a/나.md", sha2, 1, false}, // edited since: the path only
		{"a/라.md", sha1, -1, false},
		{"", sha1, -1, false},
	} {
		p, h := shared.share(strings.Clone(c.path), strings.Clone(c.sha))
		switch {
		case c.file < 0 && (p != "" || h != ""):
			t.Errorf("%s: lent %q %q, want nothing", c.path, p, h)
		case c.file >= 0 && !same(p, tree[c.file].Path):
			t.Errorf("%s: path %q is not the tree's own", c.path, p)
		case c.file >= 0 && c.sameSHA != same(h, tree[c.file].SHA):
			t.Errorf("%s: sha %q lent: %v, want %v", c.path, h, !c.sameSHA, c.sameSHA)
		case c.file >= 0 && !c.sameSHA && h != "":
			t.Errorf("%s: sha %q lent for another version", c.path, h)
		}
	}
}

// TestReadTreeAndRegistry_FullRun_EntriesShareTheTreeReadAhead: a full
// run's tree read while the lease was taken is lent to the registry's
// listing before it starts: every entry listed from metadata whose path
// and sha the head holds has the tree's own strings, its name a slice of
// its path; an entry of another version has the tree's path, its own sha.
func TestReadTreeAndRegistry_FullRun_EntriesShareTheTreeReadAhead(t *testing.T) {
	t.Parallel()
	const sha1, sha2 = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	tree := []policy.File{{Path: strings.Clone("a/가.md"), SHA: strings.Clone(sha1)}, {Path: strings.Clone("a/나.md"), SHA: strings.Clone(sha1)}}
	var listed []registry.Item
	for _, e := range []struct{ name, sha string }{{"가", sha1}, {"나", sha2}} {
		pair := registry.PolicyPair(policy.Entry{PolicyName: e.name, Title: e.name, Status: policy.StatusActive, LastUpdated: "2026-11-26T16:00:00Z", SHA: e.sha, Path: "a/" + e.name + ".md"})
		listed = append(listed, registry.Item{Key: pair.Key, Metadata: pair.Metadata})
	}
	done := make(chan struct{})
	close(done)
	ahead := &readAhead{tree: &treeRead{done: done, cancel: func() {}, val: headFiles{files: tree}}}
	r := &run{Syncer: &Syncer{Registry: registry.New(listingStore{policies: listed})}, opt: Options{}.withDefaults(), log: (&Syncer{}).logger()}
	_, reg, err := r.readTreeAndRegistry(t.Context(), state{head: "h"}, nil, ahead)
	if err != nil || len(reg.entries) != 2 {
		t.Fatalf("read: %d entries, %v", len(reg.entries), err)
	}
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	if e := reg.entries["가"]; !same(e.Path, tree[0].Path) || !same(e.SHA, tree[0].SHA) || !same(e.PolicyName, tree[0].Path[2:]) {
		t.Errorf("가: path, sha and name are not the tree's own: %+v", e)
	}
	if e := reg.entries["나"]; !same(e.Path, tree[1].Path) || same(e.SHA, tree[1].SHA) || e.SHA != sha2 {
		t.Errorf("나: want the tree's path and its own sha %s: %+v", sha2, e)
	}
}

// listingStore lists policy keys with their metadata and no value, as
// Cloudflare's store does, and nothing else.
type listingStore struct {
	registry.Store // nil: no other method is called
	policies       []registry.Item
}

func (s listingStore) List(_ context.Context, prefix string) ([]registry.Item, error) {
	if prefix == registry.PolicyPrefix {
		return s.policies, nil
	}
	return nil, nil
}

// TestItemGroup_EntriesMadeFromTheItemsWhenTheStoreTakesThem: a batch's
// announcements and entries are made from the plan's items when the store
// makes their pairs, not when the batch is made (a batch of 10,000 entries
// held as made was some 2 MB beside its items, docs/bench.md).
func TestItemGroup_EntriesMadeFromTheItemsWhenTheStoreTakesThem(t *testing.T) {
	t.Parallel()
	items := []policy.Item{
		{Action: policy.ActAdd, PolicyName: "학칙", Path: "학칙.md", SHA: "aaa"},
		{Action: policy.ActMove, PolicyName: "규정", Path: "새/규정.md", SHA: "bbb"},
	}
	r := &run{Syncer: &Syncer{}, start: time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)}
	p := r.writes(policy.Plan{Items: items}, registryState{}, differ.Migration{}, differ.QueueWork{}, nil)
	g := p.itemGroup(items)
	var sent atomic.Int64
	none := func(string) bool { return false }
	batches := []batch{r.keep(p, g, true, none, &counter{}, &sent), r.keep(p, g, false, none, &counter{}, &sent)}
	items[0].Title, items[1].Title = "학칙 제목", "규정 제목" // read after the batch was made
	items[0].SHA = "ccc"
	reg := registry.New(registry.NewMemory(time.Now))
	for _, b := range batches {
		if failed := b.write(t.Context(), reg); len(failed) != 0 {
			t.Fatalf("Write: %v", failed)
		}
	}
	entries, _, err := reg.Entries(t.Context(), []string{"학칙", "규정"})
	if err != nil {
		t.Fatal(err)
	}
	if got := entries["학칙"]; got.Title != "학칙 제목" || got.SHA != "ccc" || got.Path != "학칙.md" {
		t.Errorf("학칙 = %+v, want the item as it was when the store took it", got)
	}
	if got := entries["규정"]; got.Title != "규정 제목" || got.Path != "새/규정.md" {
		t.Errorf("규정 = %+v, want the item as it was when the store took it", got)
	}
	q, err := reg.Queue(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(q) != 1 || q["학칙"].SHA != "ccc" || q["학칙"].Operation != policy.OpAdd {
		t.Errorf("queue = %+v, want the add announced with the sha of its item when the store took it", q)
	}
}

// TestKeep_BatchMadeAtTheGroupsSize: a group's batch is made once at the
// group's size, not grown by appends (a batch of 10,000 ops grown so
// allocated about twice its 0.8 MB; docs/bench.md, "How we got here",
// "Memory, sixth pass"), and keeps every write of the group, in order.
func TestKeep_BatchMadeAtTheGroupsSize(t *testing.T) {
	t.Parallel()
	items := make([]policy.Item, 1000)
	for i := range items {
		items[i] = policy.Item{Action: policy.ActAdd, PolicyName: fmt.Sprintf("p%04d", i), Path: fmt.Sprintf("p%04d.md", i), SHA: "aaa"}
	}
	r := &run{Syncer: &Syncer{}, start: time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)}
	p := r.writes(policy.Plan{Items: items}, registryState{}, differ.Migration{}, differ.QueueWork{}, nil)
	g := p.itemGroup(items)
	var sent atomic.Int64
	b := r.keep(p, g, false, func(string) bool { return false }, &counter{}, &sent)
	if b.items == nil {
		t.Fatal("an item group's batch is made of ops, not its items' indices")
	}
	if n := b.len(); n != len(items) || cap(b.items.idx) != len(items) || sent.Load() != int64(len(items)) {
		t.Errorf("batch of %d (room for %d), %d sent: want %d of each", n, cap(b.items.idx), sent.Load(), len(items))
	}
	if n := b.len(); n > 0 && (b.name(0) != "p0000" || b.name(n-1) != "p0999") {
		t.Errorf("batch from %s to %s, want p0000 to p0999", b.name(0), b.name(n-1))
	}
}

// TestKeep_ItemBatchHoldsAnIndexAWrite: a batch of a group of the plan's
// items holds the index of each item it writes (4 bytes), not an op, a
// registry.Write, a key and two closures a write (some 220 bytes: at
// 20,000 writes in flight 4 MB; docs/bench.md, "How we got here",
// "Memory, eighth pass"). It leaves out the items it does not write (a
// move is not announced, a delete is removed) and those skip names
// (counted done); its keys are made from the items, for the store and
// for a failure, and so are its names for a batch kept for the next run.
func TestKeep_ItemBatchHoldsAnIndexAWrite(t *testing.T) {
	t.Parallel()
	items := make([]policy.Item, 1000)
	for i := range items {
		items[i] = policy.Item{Action: policy.ActAdd, PolicyName: fmt.Sprintf("p%04d", i), Path: fmt.Sprintf("p%04d.md", i), SHA: "aaa"}
	}
	items[1].Action, items[2].Action = policy.ActMove, policy.ActDelete
	r := &run{Syncer: &Syncer{}, start: time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)}
	p := r.writes(policy.Plan{Items: items}, registryState{}, differ.Migration{}, differ.QueueWork{}, nil)
	var sent atomic.Int64
	count := &counter{to: r.progress()}
	b := r.keep(p, p.itemGroup(items), true, func(name string) bool { return name == "p0003" }, count, &sent)
	if b.items == nil || b.ops != nil {
		t.Fatalf("batch %+v: want the items' indices, no ops", b)
	}
	if held := int(unsafe.Sizeof(b.items.idx[0]))*cap(b.items.idx) + int(unsafe.Sizeof(*b.items)); held > 8*len(items) {
		t.Errorf("a batch of %d writes holds %d bytes of its own, want at most 8 a write", b.len(), held)
	}
	if b.len() != 997 || sent.Load() != 997 || count.done != 1 {
		t.Errorf("%d writes, %d sent, %d counted done: want 997, 997 and p0003 done", b.len(), sent.Load(), count.done)
	}
	if b.name(0) != "p0000" || b.name(1) != "p0004" || b.key(1) != registry.QueueKey("p0004") {
		t.Errorf("batch starts %s, %s (%s): want p0000, then p0004 announced", b.name(0), b.name(1), b.key(1))
	}
	var f failures
	f.add(b, map[string]error{registry.QueueKey("p0004"): errors.New("boom"), registry.PolicyKey("p0005"): errors.New("not this batch's")})
	if diff := cmp.Diff([]policy.Failure{{PolicyName: "p0004", Error: "boom"}}, f.list()); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}
	if f.first != registry.QueueKey("p0004")+": boom" || f.keys != 1 {
		t.Errorf("first failure %q of %d, want the queue key of p0004, 1", f.first, f.keys)
	}
	pub := r.keep(p, p.itemGroup(items), false, func(string) bool { return false }, count, &sent)
	f.wait(pub)
	if len(f.later) != 999 || !f.later["p0001"] || f.later["p0002"] || pub.key(1) != registry.PolicyKey("p0001") {
		t.Errorf("%d names wait (p0001 %t, p0002 %t), second key %s: want 999, the move's, not the delete's, policy:p0001",
			len(f.later), f.later["p0001"], f.later["p0002"], pub.key(1))
	}
}
