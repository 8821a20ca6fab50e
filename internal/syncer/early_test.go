package syncer_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/github"
	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/syncer"
)

// leaseHeld is a Store whose first lease write waits, up to a second, until
// each of the reads it is told to expect has begun, and records which did:
// a read that begins only after the lease write landed never does.
type leaseHeld struct {
	registry.Store
	once   sync.Once
	signal map[string]chan struct{} // by read: closed when it began
	polled map[string]func() bool   // by read: whether it began
	mu     sync.Mutex
	began  map[string]bool // the reads that began while the lease write was held
	// expected is how many reads hold waits for
	expected int
}

func newLeaseHeld(inner registry.Store, reads ...string) *leaseHeld {
	h := &leaseHeld{Store: inner, signal: map[string]chan struct{}{}, polled: map[string]func() bool{}, began: map[string]bool{}}
	for _, r := range reads {
		h.signal[r] = make(chan struct{})
	}
	h.expected = len(reads)
	return h
}

// poll expects the read that seen tells of.
func (h *leaseHeld) poll(read string, seen func() bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.polled[read] = seen
	h.expected++
}

// saw tells the store that read began.
func (h *leaseHeld) saw(read string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.signal[read]; ok {
		select {
		case <-c:
		default:
			close(c)
		}
	}
}

func (h *leaseHeld) List(ctx context.Context, prefix string) ([]registry.Item, error) {
	h.saw("list " + prefix)
	return h.Store.List(ctx, prefix)
}

func (h *leaseHeld) Put(ctx context.Context, pairs []registry.Pair) map[string]error {
	for _, p := range pairs {
		if p.Key == registry.LeaseKey {
			h.once.Do(h.hold)
		}
	}
	return h.Store.Put(ctx, pairs)
}

// hold waits for the expected reads (a second in all) and records them.
func (h *leaseHeld) hold() {
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		h.mu.Lock()
		for r, c := range h.signal {
			select {
			case <-c:
				h.began[r] = true
			default:
			}
		}
		for r, seen := range h.polled {
			if seen() {
				h.began[r] = true
			}
		}
		all := len(h.began) == h.expected
		h.mu.Unlock()
		if all {
			return
		}
	}
}

func (h *leaseHeld) beganBeside(read string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.began[read]
}

// treeWatched is a Source that tells h when a tree read begins.
type treeWatched struct {
	syncer.Source
	h *leaseHeld
}

func (s treeWatched) Tree(ctx context.Context, commit string) ([]policy.File, error) {
	s.h.saw("tree")
	return s.Source.Tree(ctx, commit)
}

// Only the registry's reads for the plan must follow the lease: the head
// tree (GitHub's) and, on a first sync, the queue listing of the writes
// waiting for retry (read before the lease until now) go beside its write.
func TestLease_FirstSync_TreeAndQueueReadBesideTheLeaseWrite(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.seed()
	h := newLeaseHeld(r.store, "tree", "list "+registry.QueuePrefix)
	r.s.Registry = registry.New(h)
	r.s.Source = treeWatched{Source: r.s.Source, h: h}
	res := r.mustRun()
	if res.Summary.Added != 3 {
		t.Fatalf("added %d, want 3", res.Summary.Added)
	}
	if !h.beganBeside("tree") {
		t.Error("the head tree was read after the lease write, not beside it")
	}
	if !h.beganBeside("list " + registry.QueuePrefix) {
		t.Error("the first sync listed the queue before or after the lease write, not beside it")
	}
	if len(r.lastRun().Pending) != 0 || r.lastRun().Pending == nil {
		t.Errorf("pending %v, want known and empty", r.lastRun().Pending)
	}
}

// A refused lease leaves the registry as it was although the tree and the
// queue were read beside it, and says so.
func TestLease_RefusedFirstSync_EarlyReadsDropped_NothingWritten(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.seed()
	ctx := context.Background()
	other, err := r.reg.TakeLease(ctx, nil, "other-run", r.clock.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.run(syncer.Options{})
	if !errors.Is(err, registry.ErrLeaseHeld) {
		t.Fatalf("run: %v, want ErrLeaseHeld", err)
	}
	if got := r.policies(); len(got) != 0 {
		t.Errorf("policies written under another's lease: %v", got)
	}
	assertNoQueue(t, r)
	if lc := r.lastCommit(); lc != "" {
		t.Errorf("lastCommit %q, want none", lc)
	}
	if st := res.Summary.Status; st != policy.RunRefused {
		t.Errorf("status %q, want %q", st, policy.RunRefused)
	}
	if p := res.Summary.Pending; p == nil || len(p) != 0 {
		t.Errorf("pending %v, want [] (the empty queue, read beside the lease)", p)
	}
	l, err := r.reg.Lease(ctx)
	if err != nil || l == nil || l.Owner != other.Owner {
		t.Errorf("lease %+v, %v; want still other-run's", l, err)
	}
}

// A tree that cannot be read while the lease is written fails the run:
// nothing written but the lease and the run's record, lastCommit unset.
func TestLease_TreeFailsBesideTheLease_RunFailed_NothingWritten(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.seed()
	r.gh.FailNext(githubtest.KindTree, -1, githubtest.StatusError(404, "Not Found"))
	_, err := r.run(syncer.Options{})
	if err == nil || !strings.Contains(err.Error(), "tree") {
		t.Fatalf("run: %v, want the tree's error", err)
	}
	assertFailedFirstSync(t, r)
}

// assertFailedFirstSync checks that a first sync that failed wrote nothing
// but the lease and its record: no policy, no queue entry, no lastCommit.
func assertFailedFirstSync(t *testing.T, r *rig) {
	t.Helper()
	if got := r.policies(); len(got) != 0 {
		t.Errorf("policies written: %v", got)
	}
	assertNoQueue(t, r)
	if lc := r.lastCommit(); lc != "" {
		t.Errorf("lastCommit %q, want none", lc)
	}
	if st := r.lastRun().Status; st != policy.RunFailed {
		t.Errorf("status %q, want %q", st, policy.RunFailed)
	}
}

func assertNoQueue(t *testing.T, r *rig) {
	t.Helper()
	items, err := r.store.List(context.Background(), registry.QueuePrefix)
	if err != nil || len(items) != 0 {
		t.Errorf("queue entries %v, %v; want none", items, err)
	}
}

// listHeld is a Store whose first listing of policies (or of prefix, when
// set) waits, up to a second, until ahead says the read it expects has
// begun, and records whether it did. It remembers the prefixes listed.
type listHeld struct {
	registry.Store
	prefix string
	ahead  func() bool
	once   sync.Once
	began  atomic.Bool
	listed sync.Map // prefix → true
}

func (h *listHeld) List(ctx context.Context, prefix string) ([]registry.Item, error) {
	h.listed.Store(prefix, true)
	if prefix == cmp.Or(h.prefix, registry.PolicyPrefix) {
		h.once.Do(func() {
			for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
				if h.ahead() {
					h.began.Store(true)
					return
				}
			}
		})
	}
	return h.Store.List(ctx, prefix)
}

func seedMany(r *rig, n int) {
	for i := range n {
		r.repo.Write(fmt.Sprintf("규정/%02d.md", i), fmt.Sprintf("# 규정 %d\n", i))
	}
	r.repo.Commit("seed")
}

// Once the tree says a first sync reads more files than the archive
// threshold, the archive is asked for (its link and its download) beside
// the registry's listings, and the titles step takes it: no request more.
func TestRead_FirstSync_ArchiveAskedBesideTheListings(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	seedMany(r, 12)
	h := &listHeld{Store: r.store, ahead: func() bool { return r.gh.Requests()[githubtest.KindArchive] > 0 }}
	r.s.Registry = registry.New(h)
	r.mustAddAll(12)
	if !h.began.Load() {
		t.Error("the archive was asked for after the registry's listings, not beside them")
	}
	r.wantArchiveRead()
}

// A refused lease downloads nothing: only the archive's link may have been
// asked beside it (a read, asked at once on a first sync); the download
// waits for the lease, and for the tree to show enough files.
func TestLease_RefusedFirstSync_NoArchiveDownloaded(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	seedMany(r, 12)
	if _, err := r.reg.TakeLease(context.Background(), nil, "other-run", r.clock.Now(), time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := r.run(syncer.Options{}); !errors.Is(err, registry.ErrLeaseHeld) {
		t.Fatalf("run: %v, want ErrLeaseHeld", err)
	}
	if c := r.gh.Requests(); c[githubtest.KindArchive] != 0 {
		t.Errorf("requests %v, want no archive downloaded under another's lease", c)
	}
	if got := r.policies(); len(got) != 0 {
		t.Errorf("policies written under another's lease: %v", got)
	}
}

// A first sync lists the queue for the writes waiting for retry beside
// the lease, and that listing no longer holds up the registry's listing of
// policies: after a first sync its deadline cut, each lists every key
// written so far, a page at a time (docs/bench.md, "A first sync across
// deadlines, with the walk").
func TestRead_FirstSync_QueueListedBesideThePolicies(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.seed()
	h := &listHeld{Store: r.store, prefix: registry.QueuePrefix}
	h.ahead = func() bool { _, ok := h.listed.Load(registry.PolicyPrefix); return ok }
	r.s.Registry = registry.New(h)
	if res := r.mustRun(); res.Summary.Added != 3 {
		t.Fatalf("added %d, want 3", res.Summary.Added)
	}
	if !h.began.Load() {
		t.Error("the policies were listed once the queue's listing had ended, not beside it")
	}
	if p := r.lastRun().Pending; p == nil || len(p) != 0 {
		t.Errorf("pending %v, want known and empty", p)
	}
}

// queueFails is a Store whose queue listings fail.
type queueFails struct{ registry.Store }

func (s queueFails) List(ctx context.Context, prefix string) ([]registry.Item, error) {
	if prefix == registry.QueuePrefix {
		return nil, errors.New("queue listing down")
	}
	return s.Store.List(ctx, prefix)
}

// When the writes waiting for retry cannot be read, the run fails with
// that error, though the registry's listings, beside it, succeeded:
// nothing is written but the lease and the run's record.
func TestRead_FirstSync_QueueListingFails_RunFailed_NothingWritten(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.seed()
	r.s.Registry = registry.New(queueFails{r.store})
	_, err := r.run(syncer.Options{})
	if err == nil || !strings.Contains(err.Error(), "queue listing down") {
		t.Fatalf("run: %v, want the queue listing's error", err)
	}
	assertFailedFirstSync(t, r)
}

// A full run lists the policies and the dead letters at once.
func TestRead_FullRun_PoliciesAndDeadLettersListedAtOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.seed()
	h := &listHeld{Store: r.store}
	h.ahead = func() bool { _, ok := h.listed.Load(registry.DeadLetterPrefix); return ok }
	r.s.Registry = registry.New(h)
	if res := r.mustRun(); res.Summary.Added != 3 {
		t.Fatalf("added %d, want 3", res.Summary.Added)
	}
	if !h.began.Load() {
		t.Error("the dead letters were listed after the policies, not beside them")
	}
}

// A run that has synced nothing reads every file: it asks for the
// archive's link beside the lease write, as soon as the tree read beside it
// shows more files than the threshold, and the download once the tree is
// in.
func TestLease_FirstSync_ArchiveLinkAskedBesideTheLeaseWrite(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	seedMany(r, 12)
	h := newLeaseHeld(r.store)
	h.poll("archive-link", func() bool { return r.gh.Requests()[githubtest.KindArchiveLink] > 0 })
	r.s.Registry = registry.New(h)
	r.mustAddAll(12)
	if !h.beganBeside("archive-link") {
		t.Error("the archive's link was asked after the lease write, not beside it")
	}
	r.wantArchiveRead()
}

// A first sync of a few files asks for the archive's link (at once, beside
// the tree, before the tree says how many files there are) and leaves it
// unused: nothing downloaded, blobs only.
func TestLease_FirstSyncOfAFewFiles_LinkAskedUnused_BlobsRead(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.seed()
	held := r.holdTreeForLink()
	if res := r.mustRun(); res.Summary.Added != 3 {
		t.Fatalf("added %d, want 3", res.Summary.Added)
	}
	if !held.linkFirst.Load() {
		t.Error("the tree was answered before the archive's link was asked")
	}
	if c := r.gh.Requests(); c[githubtest.KindArchiveLink] != 1 || c[githubtest.KindArchive] != 0 || c[githubtest.KindBlob] != 3 {
		t.Errorf("requests %v, want three blobs, the link and no download", c)
	}
}

// linkBeforeTree is a transport to the fake GitHub that holds every tree
// answer, up to a second, until an answer to the archive's link came: a
// link asked only once the tree is known never comes in time.
type linkBeforeTree struct {
	next      http.RoundTripper
	link      chan struct{} // closed when the link's answer came
	once      sync.Once
	linkFirst atomic.Bool // a tree answer waited for the link's
}

func (l *linkBeforeTree) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	switch {
	case strings.Contains(req.URL.Path, "/tarball/"):
		l.once.Do(func() { close(l.link) })
	case strings.Contains(req.URL.Path, "/git/trees/"):
		select {
		case <-l.link:
			l.linkFirst.Store(true)
		case <-time.After(time.Second):
		}
	}
	return resp, err
}

// holdTreeForLink gives the run a Source whose tree answers wait for the
// archive's link (linkBeforeTree).
func (r *rig) holdTreeForLink() *linkBeforeTree {
	r.t.Helper()
	l := &linkBeforeTree{next: http.DefaultTransport, link: make(chan struct{})}
	src, err := github.New(github.Config{
		Owner: "knue", Repo: "policies", Branch: "main", BaseURL: r.gh.URL(),
		HTTPClient: &http.Client{Transport: l, Timeout: github.DefaultTimeout},
		Sleep:      func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	})
	if err != nil {
		r.t.Fatal(err)
	}
	r.s.Source = src
	return l
}

// A run into an empty registry reads every file: it asks for the archive's
// link at once, beside the tree (whose answer here waits for the link's),
// and downloads once the tree says more files than the threshold.
func TestLease_FirstSync_ArchiveLinkAskedBesideTheTree(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	seedMany(r, 12)
	held := r.holdTreeForLink()
	r.mustAddAll(12)
	if !held.linkFirst.Load() {
		t.Error("the archive's link was asked after the tree, not beside it")
	}
	r.wantArchiveRead()
}

// Only a run into an empty registry asks for the link ahead: an
// incremental run of a few files and a full run over a registry that holds
// the tree's policies ask nothing of the archive.
func TestLease_AfterTheFirstSync_NoArchiveLinkAskedAhead(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	seedMany(r, 12)
	r.mustRun()
	r.repo.Write("규정/00.md", "# 규정 0,고침\n")
	r.repo.Commit("edit")
	r.gh.ResetRequests()
	if res := r.mustRun(); res.Summary.Mode != "incremental" || res.Summary.Updated != 1 {
		t.Fatalf("mode %q, updated %d; want incremental, 1", res.Summary.Mode, res.Summary.Updated)
	}
	if c := r.gh.Requests(); c[githubtest.KindArchiveLink] != 0 || c[githubtest.KindArchive] != 0 || c[githubtest.KindBlob] != 1 {
		t.Errorf("incremental: requests %v, want one blob and nothing of the archive", c)
	}
	r.gh.ResetRequests()
	res, err := r.run(syncer.Options{Full: true})
	if err != nil || res.Summary.Mode != "full" {
		t.Fatalf("run: %v, mode %q; want full", err, res.Summary.Mode)
	}
	if c := r.gh.Requests(); c[githubtest.KindArchiveLink] != 0 || c[githubtest.KindArchive] != 0 {
		t.Errorf("full run: requests %v, want nothing of the archive", c)
	}
}

// A link that fails costs a first sync of a few files nothing: it reads
// blobs as it would without it, whatever the link's answer (a server
// error, retried; a rate limit, which would end a read that took it).
func TestLease_FirstSyncOfAFewFiles_LinkFails_BlobsRead(t *testing.T) {
	t.Parallel()
	for name, fault := range map[string]githubtest.Fault{
		"server error": githubtest.ServerError(http.StatusBadGateway),
		"rate limit":   githubtest.PrimaryRateLimit(http.StatusForbidden, time.Now().Add(time.Hour)),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			r.seed()
			r.gh.FailNext(githubtest.KindArchiveLink, -1, fault)
			held := r.holdTreeForLink()
			res := r.mustRun()
			if res.Summary.Added != 3 || res.Summary.Status != policy.RunSuccess {
				t.Fatalf("added %d, status %q; want 3, %q", res.Summary.Added, res.Summary.Status, policy.RunSuccess)
			}
			if !held.linkFirst.Load() {
				t.Error("the tree was answered before the archive's link was asked")
			}
			if got := r.policies(); len(got) != 3 {
				t.Errorf("policies %v, want 3", got)
			}
			if c := r.gh.Requests(); c[githubtest.KindArchiveLink] == 0 || c[githubtest.KindArchive] != 0 || c[githubtest.KindBlob] != 3 {
				t.Errorf("requests %v, want the failed link, no download and three blobs", c)
			}
		})
	}
}

// treeEndHeld is a transport to the fake GitHub that gives every tree
// answer's entries at once but holds the rest of the answer (what follows
// its list of entries), up to a second, until the archive's download was
// asked: a download asked only once the whole tree is in never comes in
// time.
type treeEndHeld struct {
	next   http.RoundTripper
	asked  chan struct{} // closed when the download was asked
	once   sync.Once
	before atomic.Bool // a tree's end waited for the download
}

func (h *treeEndHeld) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.Contains(req.URL.Path, "/_codeload/") {
		h.once.Do(func() { close(h.asked) })
	}
	resp, err := h.next.RoundTrip(req)
	if err != nil || !strings.Contains(req.URL.Path, "/git/trees/") {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	cut := bytes.Index(body, []byte(`,"truncated"`))
	if cut < 0 {
		cut = len(body)
	}
	resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body[:cut]), &heldReader{h: h, rest: body[cut:]}))
	return resp, nil
}

// heldReader gives rest once the download was asked (or a second passed).
type heldReader struct {
	h    *treeEndHeld
	rest []byte
	r    io.Reader
}

func (r *heldReader) Read(p []byte) (int, error) {
	if r.r == nil {
		select {
		case <-r.h.asked:
			r.h.before.Store(true)
		case <-time.After(time.Second):
		}
		r.r = bytes.NewReader(r.rest)
	}
	return r.r.Read(p)
}

// A run into an empty registry asks for the download once its lease is
// taken and its tree, as it streams by, has shown more files than the
// threshold: before the tree's answer ends (here it waits for the
// download's request).
func TestLease_FirstSync_ArchiveDownloadAskedBeforeTheTreeEnds(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	seedMany(r, 12)
	h := &treeEndHeld{next: http.DefaultTransport, asked: make(chan struct{})}
	src, err := github.New(github.Config{
		Owner: "knue", Repo: "policies", Branch: "main", BaseURL: r.gh.URL(),
		HTTPClient: &http.Client{Transport: h, Timeout: github.DefaultTimeout},
		Sleep:      func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	})
	if err != nil {
		t.Fatal(err)
	}
	r.s.Source = src
	r.mustAddAll(12)
	if !h.before.Load() {
		t.Error("the archive was downloaded after the whole tree, not as soon as the tree showed more files than the threshold")
	}
	r.wantArchiveRead()
}

// mustAddAll runs the syncer and wants n policies added.
func (r *rig) mustAddAll(n int) {
	r.t.Helper()
	if res := r.mustRun(); res.Summary.Added != n {
		r.t.Fatalf("added %d, want %d", res.Summary.Added, n)
	}
}

// wantArchiveRead wants the run's files read from one archive: its link
// and one download, no blob.
func (r *rig) wantArchiveRead() {
	r.t.Helper()
	if c := r.gh.Requests(); c[githubtest.KindArchiveLink] != 1 || c[githubtest.KindArchive] != 1 || c[githubtest.KindBlob] != 0 {
		r.t.Errorf("requests %v, want one archive link and one download", c)
	}
}

// queueHangs is a Store whose queue listing ends only with its context (a
// listing of many pages), calling began first.
type queueHangs struct {
	registry.Store
	began func()
	// leased, when set, is closed once a put of the lease has landed
	leased     chan struct{}
	leasedOnce sync.Once
}

func (q *queueHangs) List(ctx context.Context, prefix string) ([]registry.Item, error) {
	if prefix == registry.QueuePrefix {
		q.began()
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return q.Store.List(ctx, prefix)
}

func (q *queueHangs) Put(ctx context.Context, pairs []registry.Pair) map[string]error {
	failed := q.Store.Put(ctx, pairs)
	for _, p := range pairs {
		if _, bad := failed[p.Key]; p.Key == registry.LeaseKey && !bad && q.leased != nil {
			q.leasedOnce.Do(func() { close(q.leased) })
		}
	}
	return failed
}

// A run that loses its lease while the writes waiting for retry are read
// beside its listings stops at once, saying so: it does not wait for that
// read to end.
func TestLease_LostWhileThePendingAreRead_RunStopsAtOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	seedMany(r, 12)
	leased := make(chan struct{})
	r.s.Registry = registry.New(&queueHangs{Store: r.store, leased: leased, began: func() {
		// the listing may begin before the lease is taken, beside it:
		// only a taken lease can be lost
		go func() {
			<-leased
			r.store.FailKeys(map[string]error{registry.LeaseKey: errors.New("refused")}) // no renewal lands
			r.clock.Advance(time.Hour)
		}()
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	_, err := r.s.Run(ctx, syncer.Options{LeaseTTL: 60 * time.Millisecond})
	if took := time.Since(start); !errors.Is(err, syncer.ErrLeaseLost) || took > time.Second {
		t.Errorf("run ended after %v with %v; want ErrLeaseLost at once", took, err)
	}
	if got := r.policies(); len(got) != 0 {
		t.Errorf("policies written after the lease was lost: %v", got)
	}
}
