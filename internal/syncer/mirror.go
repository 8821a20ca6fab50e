package syncer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"
	"golang.org/x/text/unicode/norm"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// ContentSource is a Source that hands the bytes of the files it reads for
// titles to a callback as they stream (internal/github implements it): the
// content mirror uploads from the read that finds titles.
type ContentSource interface {
	// TitlesWith is Source.Titles that also calls each with every file it
	// reads whole; data is valid only during the call, calls are never
	// concurrent, and each may block.
	TitlesWith(ctx context.Context, commit string, files []policy.File, maxSize int64, each func(path string, data []byte)) (map[string]policy.Content, map[string]error, error)
}

// ErrMirrorGuard refuses a full run whose mirror repair would delete more
// foreign objects under the prefix than the mass-delete guard allows.
var ErrMirrorGuard = fmt.Errorf("%w: content mirror", differ.ErrRefused)

// mirrorRun is the content mirror's part of one run: what the titles step
// uploaded, and what a full run's listing says to repair.
type mirrorRun struct {
	target mirror.Target
	prefix string
	base   mirror.Stats // the target's counters when the run started
	up     *uploads     // uploaded so far, by policy name
	// listed is how many objects the prefix held when a full run listed
	// it, -1 when this run did not list it; drift is what to repair then.
	listed int
	drift  mirror.Repairs
	keys   map[string]bool // the keys under the prefix, as far as the run knows: listed, uploaded, deleted
	// what the apply step did (on a dry run, what it would do)
	deleted, repaired int
	unrepaired        bool // a mirror failure no queue entry records
	// aliasLeft are the aliases resolveAliases kept, and why
	aliasLeft map[string]string
	// hadAliases: the run met aliases, and recounts its objects (recount);
	// counted: keys is that recount's listing
	hadAliases, counted bool
	want                map[string]mirror.Want // what a full run compared its listing with (Drift)
	// unjudged are the keys of policy-shaped objects a first sync found
	// under the prefix while the registry read held no policy: left, as
	// that read may lag (unjudgedObjects), sorted
	unjudged []string
	// listing is the prefix as windowsOrWhole listed it, for mirrorPlan
	// to take (prelisted) instead of listing again
	listing   []mirror.Listed
	prelisted bool
	// done is what the windows before this one did, in a first sync in
	// windows (windows.go), counted: nil in a whole run
	done *mirrorDone
}

// mirrorDone is what a first sync's windows did to the mirror, counted as
// the record needs it: objects uploaded, the keys known under the prefix
// (listed before window 0, then uploaded), and whether an object was sent
// that its window did not publish (strayUploads).
type mirrorDone struct {
	uploaded, objects int
	stray             bool
}

// endWindow counts into m.done what one window of a first sync did to the
// mirror, applied being what it published (nil: nothing), and lets go of
// its maps by key: the next window starts empty, as its prefix had no
// object of its names.
func (m *mirrorRun) endWindow(applied *policy.Plan) {
	if m == nil || m.done == nil {
		return
	}
	m.done.uploaded += len(m.up.etags)
	m.done.stray = m.done.stray || m.strayUploads(applied)
	for name := range m.up.etags {
		m.keys[mirror.Key(m.prefix, name)] = true
	}
	m.done.objects += len(m.keys)
	m.up, m.keys = newUploads(), map[string]bool{}
}

// uploads is what a run stored in the mirror, by policy name: the ETag,
// or why it failed (the error itself: one the run's deadline cut waits,
// failures.addMirror). Safe for concurrent use.
type uploads struct {
	mu     sync.Mutex
	etags  map[string]string
	failed map[string]error
	// sent are the names whose object was sent to the target, landed or
	// not: a put whose answer was lost may have stored it
	sent map[string]bool
}

func newUploads() *uploads {
	return &uploads{etags: map[string]string{}, failed: map[string]error{}, sent: map[string]bool{}}
}

func (u *uploads) sending(name string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.sent[name] = true
}

func (u *uploads) done(name, etag string, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if err != nil {
		u.failed[name] = err
		delete(u.etags, name)
		return
	}
	u.etags[name] = etag
	delete(u.failed, name)
}

func (u *uploads) etag(name string) (string, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	e, ok := u.etags[name]
	return e, ok
}

func (u *uploads) tried(name string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	_, ok := u.etags[name]
	_, bad := u.failed[name]
	return ok || bad
}

// newMirrorRun starts the mirror's part of a run; nil when no mirror is
// configured.
func (r *run) newMirrorRun() *mirrorRun {
	if r.Mirror == nil {
		return nil
	}
	prefix := r.MirrorPrefix
	if prefix == "" {
		prefix = mirror.DefaultPrefix
	}
	return &mirrorRun{target: r.Mirror, prefix: prefix, base: r.Mirror.Stats(), up: newUploads(), listed: -1}
}

// uploader uploads the objects of the files a read hands it, at most
// Concurrency at once: each blocks while that many are in flight, so the
// read holds no more than the files in flight.
type uploader struct {
	ctx    context.Context
	m      *mirrorRun
	byPath map[string]wanted // each wanted path
	g      errgroup.Group
	// late says the run is out of time (run.outOfTime): an upload not yet
	// started then waits for the next run, as a registry write would
	late func() bool
}

// wanted is what the uploader keeps of a doc until its file streams by (the
// path is its key; the title and the content come with the file): a
// compact record per policy, held for the whole read.
type wanted struct{ name, sha, lastUpdated string }

func (r *run) newUploader(ctx context.Context, m *mirrorRun, docs []mirror.Doc) *uploader {
	u := &uploader{ctx: ctx, m: m, byPath: make(map[string]wanted, len(docs)), late: func() bool { return r.outOfTime(ctx) }}
	for _, d := range docs {
		u.byPath[d.Path] = wanted{name: d.PolicyName, sha: d.SHA, lastUpdated: d.LastUpdated}
	}
	u.g.SetLimit(r.opt.Concurrency)
	return u
}

// each is the read's callback: it renders the file's object (a copy of
// data) and uploads it.
func (u *uploader) each(path string, data []byte) {
	w, ok := u.byPath[path]
	if !ok || len(data) == 0 { // an empty file is skipped, never mirrored
		return
	}
	d := mirror.Doc{PolicyName: w.name, SHA: w.sha, Path: path, LastUpdated: w.lastUpdated,
		Title: policy.Title(data, policy.NameOf(path)), Content: data}
	o, err := mirror.Render(u.m.prefix, d)
	if err != nil {
		u.m.up.done(d.PolicyName, "", fileError{err})
		return
	}
	u.g.Go(func() error {
		if u.late() { // checked once a slot is free: Go may have waited for it
			u.m.up.done(d.PolicyName, "", errNoTime)
			return nil
		}
		etag, err := u.m.target.Put(u.ctx, o)
		if err == nil || mayHaveStored(err) {
			u.m.up.sending(d.PolicyName)
		}
		u.m.up.done(d.PolicyName, etag, err)
		return nil
	})
}

func (u *uploader) wait() { _ = u.g.Wait() }

// errNoTime is why an upload was not started: the run was out of time. It
// is the deadline's error, so that the policy waits (timeUp), as a
// registry write the run had no time for does.
var errNoTime = fmt.Errorf("not sent, the run is out of time: %w", context.DeadlineExceeded)

// mayHaveStored says whether a failed put may have stored its object: its
// answer was lost (the store unavailable after retries, the context
// ended), not a refusal.
func mayHaveStored(err error) bool {
	return errors.Is(err, mirror.ErrUnavailable) || isContextErr(err)
}

// titlesUploader is the uploader of the titles step: the adds and updates
// of the plan, uploaded as their files stream by. nil (read titles only)
// without a mirror, on a dry run, and when the plan might not pass the
// mass-delete guard: a refused plan must not change the mirror, and
// without titles the guard can only be stricter, so a plan it lets through
// here passes later too (else the apply step reads what it uploads again).
func (r *run) titlesUploader(ctx context.Context, m *mirrorRun, plan policy.Plan, reg registryState, renames map[string]string) *uploader {
	if m == nil || r.opt.DryRun || r.guard(plan, reg, renames) != nil {
		return nil
	}
	now := r.start.Format(policy.TimeLayout)
	var docs []mirror.Doc
	for _, it := range plan.Items {
		if it.Action == policy.ActAdd || it.Action == policy.ActUpdate {
			docs = append(docs, mirror.Doc{PolicyName: it.PolicyName, SHA: it.SHA, Path: it.Path, LastUpdated: now})
		}
	}
	return r.newUploader(ctx, m, docs)
}

// TitleStreamer is a Source that hands each file's Content to put as it
// reads it, keeping no map of them (internal/github implements it): the
// titles step writes each title into its plan item.
type TitleStreamer interface {
	// TitlesEach is ContentSource.TitlesWith with put called once a file
	// (never concurrently) instead of a map returned; each may be nil.
	TitlesEach(ctx context.Context, commit string, files []policy.File, maxSize int64, each func(path string, data []byte), put func(path string, c policy.Content)) (map[string]error, error)
}

// readContents reads files for titles, handing each file's Content to put
// and its bytes to up when up is not nil (the Source must then be a
// ContentSource or a TitleStreamer).
func (r *run) readContents(ctx context.Context, head string, files []policy.File, up *uploader, put func(string, policy.Content)) (map[string]error, error) {
	var each func(string, []byte)
	if up != nil {
		defer up.wait()
		each = up.each
	}
	if ts, ok := r.Source.(TitleStreamer); ok {
		return ts.TitlesEach(ctx, head, files, r.opt.MaxFileSize, each, put)
	}
	var (
		read   map[string]policy.Content
		failed map[string]error
		err    error
	)
	if up == nil {
		read, failed, err = r.Source.Titles(ctx, head, files, r.opt.MaxFileSize)
	} else if cs, ok := r.Source.(ContentSource); ok {
		read, failed, err = cs.TitlesWith(ctx, head, files, r.opt.MaxFileSize, each)
	} else {
		return nil, fmt.Errorf("content mirror: the source cannot stream contents: %w", policy.ErrConfig)
	}
	for path, c := range read {
		put(path, c)
	}
	return failed, err
}

// mirrorPlan is the mirror's plan step, before the titles step uploads
// anything (a refused plan must not change the mirror; a failed listing
// must not leave it half-written): a full run lists the prefix and
// compares it with what the head wants (mirror.Drift, using the ETags the
// registry records; nothing is downloaded). The foreign objects it would
// delete pass the mass-delete guard's limit, as the registry's deletes do.
// The repairs are narrowed once the titles are read (keepRepairs).
func (r *run) mirrorPlan(ctx context.Context, m *mirrorRun, st state, mode string, reg registryState, desired differ.Desired, plan policy.Plan) error {
	if m == nil || mode != differ.ModeFull || m.done != nil { // in windows: listed before window 0 (mirrorWindows)
		return nil
	}
	listed, err := m.list(ctx)
	if err != nil {
		return fmt.Errorf("list content mirror: %w", err)
	}
	m.listed = len(listed)
	m.keys = make(map[string]bool, len(listed))
	for _, l := range listed {
		m.keys[l.Key] = true
	}
	m.want = mirrorWants(reg, desired, plan)
	m.drift = mirror.Drift(m.prefix, m.want, listed)
	if st.prev == nil && len(reg.entries)+len(reg.unreadable)+len(reg.v1) == 0 {
		m.unjudgedObjects()
	}
	for _, key := range m.drift.Unsafe {
		r.log.Warn("content mirror key left for an operator", logkey.Key, key)
	}
	lim := r.opt.deleteLimit()
	n := len(m.drift.Delete) - ownStrays(m.prefix, m.drift.Delete, desired)
	// an allowance of exactly N deletes was reviewed for the registry's
	// plan, not for foreign objects: only "any" lifts this guard (review)
	if r.opt.allowDeletes() != differ.AllowAny && n > lim.Count && n*100 > lim.Percent*max(len(listed), 1) {
		return fmt.Errorf("%w: a repair would delete %d of the %d objects under %s (more than MAX_DELETE and MAX_DELETE_PERCENT); run with --allow-mass-delete if that is meant", ErrMirrorGuard, n, len(listed), m.prefix)
	}
	return nil
}

// ownStrays counts the foreign keys that are objects of the head's own
// policies the registry does not publish (adds a dead letter holds back,
// uploaded before their writes failed): the guard does not count them, as
// no published text goes with them (a reviewer: eleven such adds made
// every run refused, ordinary edits with them).
func ownStrays(prefix string, keys []string, desired differ.Desired) int {
	n := 0
	for _, k := range keys {
		if name, ok := mirror.PolicyNameOf(prefix, k); ok {
			if _, head := desired.Get(name); head {
				n++
			}
		}
	}
	return n
}

// unjudgedObjects moves out of a first sync's foreign objects those whose
// key is a policy's: the registry read held no policy and no run record,
// which a registry whose reads lag shows for a while after another run
// wrote it (docs/design.md, "Stale reads"), and deleting them could take
// the text of a policy the registry publishes (the soak, seeds 80009 and
// 80457). They are left, their policies named (unsafeLeft): the run is partial,
// the mirror not converged, and the next full run, with a record to trust,
// judges them.
func (m *mirrorRun) unjudgedObjects() {
	m.drift.Delete = slices.DeleteFunc(m.drift.Delete, func(key string) bool {
		if _, ok := mirror.PolicyNameOf(m.prefix, key); ok {
			m.unjudged = append(m.unjudged, key)
			return true
		}
		return false
	})
	slices.Sort(m.unjudged)
}

// list lists the prefix, or takes the listing windowsOrWhole made.
func (m *mirrorRun) list(ctx context.Context) ([]mirror.Listed, error) {
	if m.prelisted {
		listed := m.listing
		m.listing, m.prelisted = nil, false
		return listed, nil
	}
	return m.target.List(ctx)
}

// mirrorWindows says why a first sync with a content mirror may not take
// windows, "" when it may: only a prefix that holds no object the run
// would judge (foreign, unsafe, an alias; a folder marker is none) lets
// each window's plan be its own uploads, with no repair, delete or guard
// spanning windows (a whole plan on that empty listing has none either:
// its wants are all uploads, and keepRepairs drops those of an empty
// registry). It lists the prefix once: the listing is the windows' (its
// keys counted as objects) or the whole run's.
func (r *run) mirrorWindows(ctx context.Context, m *mirrorRun) (string, error) {
	if m == nil {
		return "", nil
	}
	listed, err := m.target.List(ctx)
	if err != nil {
		return "", fmt.Errorf("list content mirror: %w", err)
	}
	if d := mirror.Drift(m.prefix, nil, listed); len(d.Delete)+len(d.Unsafe)+len(d.Aliases) > 0 {
		m.listing, m.prelisted = listed, true
		return "the content mirror holds objects", nil
	}
	m.listed, m.keys, m.done = len(listed), make(map[string]bool, len(listed)), &mirrorDone{}
	for _, l := range listed {
		m.keys[l.Key] = true
	}
	return "", nil
}

// mirrorWants is what the mirror should hold after the run: every policy
// of the registry, with what the registry records of its upload, and
// every policy of the head (desired) the plan writes (uploaded by the
// plan, so only its key matters here). One of the head the registry does
// not publish and the plan does not write (an add a dead letter holds
// back, a new file skipped) is not wanted: an object of it, left by an
// add whose write failed, is a stray (the soak, seed 49391: kept as the
// head's, the mirror was recorded converged, and once the file left the
// head an incremental run exited success with that text in the mirror).
// One the plan deletes is wanted too, even when the registry read did not
// show its entry (a read that lags, distrusted): its object goes once its
// registry delete landed (mirrorDelete), not as a foreign object whatever
// became of that delete (a failed delete left the policy published
// without its text; the soak, seed 70525, through a lagging read).
func mirrorWants(reg registryState, desired differ.Desired, plan policy.Plan) map[string]mirror.Want {
	written := make(map[string]bool, len(plan.Items))
	for _, it := range plan.Items {
		written[it.PolicyName] = true
	}
	want := make(map[string]mirror.Want, len(desired))
	for _, d := range desired {
		if _, published := reg.entries[d.PolicyName]; published || written[d.PolicyName] {
			want[d.PolicyName] = mirror.Want{SHA: d.SHA}
		}
	}
	for _, it := range plan.Items { // deletes the read did not show

		if _, ok := want[it.PolicyName]; !ok && it.Action == policy.ActDelete {
			want[it.PolicyName] = mirror.Want{Keep: true}
		}
	}
	// The registry's version of every entry the plan keeps (a head version
	// that is skipped, held back or in the plan is not the mirror's yet).
	for name, e := range reg.entries {
		w := mirror.Want{SHA: e.SHA}
		if e.ContentETag != "" {
			w.UploadedSHA, w.ETag = e.SHA, e.ContentETag
		}
		want[name] = w
	}
	// an entry that does not decode is kept, and so is its object: the
	// registry would name a policy whose text a full run had deleted (a
	// reviewer); one the head has is written again, object and all
	for _, name := range reg.unreadable {
		if _, ok := want[name]; !ok {
			want[name] = mirror.Want{Keep: true}
		}
	}
	return want
}

// keepRepairs narrows a full run's repairs to the plan its titles step
// left (changedElsewhere): a put the titles step dropped (its file empty,
// unreadable or not reached) leaves the registry's version, which the
// mirror must then hold.
func (m *mirrorRun) keepRepairs(plan policy.Plan, reg registryState) {
	if m != nil {
		m.drift.Upload = changedElsewhere(m.drift.Upload, plan, reg)
	}
}

// fitRepairs keeps the repairs whose registry writes (each repaired
// policy's entry, recording its new ETag: repairedEntries) fit in left,
// the daily write budget's rest after the plan's items: the others wait
// for another day, the mirror not converged, so that the next run is full
// and repairs them (an adversarial helper found the repairs' writes
// outside the budget and its reservation). It returns how many it kept and
// how many wait.
func (m *mirrorRun) fitRepairs(left int64) (kept, waiting int) {
	if m == nil {
		return 0, 0
	}
	n := len(m.drift.Upload)
	kept = int(min(int64(n), max(left, 0)))
	if kept < n {
		m.drift.Upload = m.drift.Upload[:kept]
		m.unrepaired = true
	}
	return kept, n - kept
}

// changedElsewhere drops the repairs of policies the plan writes (it
// uploads them) or the registry does not hold (nothing of them is
// published, so the mirror owes nothing; their objects are kept).
func changedElsewhere(repairs []mirror.Repair, plan policy.Plan, reg registryState) []mirror.Repair {
	inPlan := make(map[string]bool, len(plan.Items))
	for _, it := range plan.Items {
		inPlan[it.PolicyName] = true
	}
	var out []mirror.Repair
	for _, rp := range repairs {
		if _, known := reg.entries[rp.PolicyName]; known && !inPlan[rp.PolicyName] {
			out = append(out, rp)
		}
	}
	return out
}

// mirrorUpload is the mirror step before the registry's writes: it uploads
// what the titles step did not (moves, whose front matter names the path;
// a plan uploaded after the guard; a full run's repairs), reading those
// files again, and returns why each failed upload failed, by policy name:
// the run must neither announce nor publish them. An upload the run's
// deadline cut, or did not leave time to start, waits for the next run
// (failures.addMirror); none is started once the run is out of time. When
// the store failed every upload (storeDown), the run stops here instead.
func (r *run) mirrorUpload(ctx context.Context, m *mirrorRun, head string, plan policy.Plan, reg registryState) (map[string]error, error) {
	if m == nil {
		return nil, nil
	}
	if docs := r.pendingDocs(m, plan, reg); len(docs) > 0 {
		r.uploadPending(ctx, m, head, docs)
	}
	failed := map[string]error{}
	deadline := deadlineOf(ctx)
	for name, err := range m.up.failed {
		failed[name] = fmt.Errorf("content mirror: %w", err)
		if timeUp(err, deadline) {
			r.log.Warn("out of time: content upload left for the next run", logkey.Policy, name, logkey.Error, err)
		} else {
			r.log.Error("content upload failed", logkey.Policy, name, logkey.Error, err)
		}
	}
	if err := m.storeDown(deadline); err != nil {
		return nil, err
	}
	for _, rp := range m.drift.Upload {
		if _, ok := m.up.etag(rp.PolicyName); ok {
			m.repaired++
		} else {
			m.unrepaired = true
		}
	}
	return failed, nil
}

// fileError is an upload that failed on the run's side, not the store's:
// its file could not be read, or rendered.
type fileError struct{ err error }

func (e fileError) Error() string { return e.err.Error() }
func (e fileError) Unwrap() error { return e.err }

// storeDown says whether the store, not the policies, failed the run's
// uploads: the run sent some, none landed, and some failed for the
// store's reasons (unavailable, or its configuration) — the others failed
// for their file's (fileError) or their object's own (its key, its path,
// its metadata: mirror.ErrRejected, ErrOutsidePrefix, a folder's error),
// which neither says the store is down nor hides that it is (review: one
// such object among 503s let the outage through as item failures; one
// alone made every run an outage).
// Every write failing is an outage, not item failures (docs/design.md, "One run", step 9):
// no retry may be counted (review: a rotated key or R2 down dead-lettered
// every policy it touched in three runs, held back once the store was
// fixed). Refused credentials or a missing bucket stay a configuration
// error (policy.ErrConfig, naming the setting); else ErrOutage. An upload
// the deadline cut waits, and counts neither way; a canceled run is no
// store's fault.
func (m *mirrorRun) storeDown(deadline time.Time) error {
	if len(m.up.etags) > 0 || m.done != nil && m.done.uploaded > 0 { // some landed, in this window or one before
		return nil
	}
	names := slices.Sorted(maps.Keys(m.up.failed))
	var first, config error
	n := 0
	for _, name := range names {
		err := m.up.failed[name]
		var own fileError
		switch {
		case timeUp(err, deadline):
			continue
		case isContextErr(err):
			return nil
		case errors.As(err, &own), !errors.Is(err, mirror.ErrUnavailable) && !errors.Is(err, policy.ErrConfig):
			// the file's or the object's own (its key, its path, its
			// metadata): that policy's failure, the store's state unknown
			continue
		}
		n++
		if first == nil {
			first = fmt.Errorf("%s: %w", name, err)
		}
		if config == nil && errors.Is(err, policy.ErrConfig) {
			config = fmt.Errorf("%s: %w", name, err)
		}
	}
	switch {
	case n == 0:
		return nil
	case config != nil:
		return fmt.Errorf("content mirror %s: all %d uploads failed, e.g. %w", m.target.Name(), n, config)
	}
	return fmt.Errorf("%w: content mirror %s: all %d uploads failed, e.g. %w", ErrOutage, m.target.Name(), n, first)
}

// uploadPending reads the files of docs again and uploads their objects;
// a run out of time reads and uploads none of them.
func (r *run) uploadPending(ctx context.Context, m *mirrorRun, head string, docs []mirror.Doc) {
	if r.outOfTime(ctx) {
		for _, d := range docs {
			m.up.done(d.PolicyName, "", errNoTime)
		}
		return
	}
	files := make([]policy.File, len(docs))
	for i, d := range docs {
		files[i] = policy.File{Path: d.Path, SHA: d.SHA, Size: -1}
	}
	up := r.newUploader(ctx, m, docs)
	tooLarge := map[string]int64{}
	readErrs, err := r.readContents(ctx, head, files, up, func(path string, c policy.Content) {
		if c.Size > r.opt.MaxFileSize {
			tooLarge[path] = c.Size
		}
	})
	for _, d := range docs {
		switch {
		case err != nil:
			m.up.done(d.PolicyName, "", fileError{fmt.Errorf("read content: %w", err)})
		case readErrs[d.Path] != nil:
			m.up.done(d.PolicyName, "", fileError{fmt.Errorf("read content: %w", readErrs[d.Path])})
		case m.up.tried(d.PolicyName):
		case tooLarge[d.Path] > 0:
			// a version the registry publishes, over MAX_FILE_SIZE since it
			// was lowered: the mirror cannot hold it, so the run must not
			// say it does (an adversarial helper found a repair of one
			// recorded success, the object missing, run after run)
			m.up.done(d.PolicyName, "", fileError{fmt.Errorf("read content: too large (%d bytes > MAX_FILE_SIZE %d)", tooLarge[d.Path], r.opt.MaxFileSize)})
		default:
			m.up.done(d.PolicyName, "", fileError{fmt.Errorf("read content: %s not delivered by the read", d.Path)})
		}
	}
}

// pendingDocs are the objects the apply step still uploads: the plan's
// puts the titles step did not upload, and a full run's repairs.
func (r *run) pendingDocs(m *mirrorRun, plan policy.Plan, reg registryState) []mirror.Doc {
	now := r.start.Format(policy.TimeLayout)
	var docs []mirror.Doc
	for _, it := range plan.Items {
		if it.Action == policy.ActDelete || it.Path == "" || m.up.tried(it.PolicyName) {
			continue
		}
		last := now
		if e, ok := reg.entries[it.PolicyName]; ok && e.LastUpdated != "" && it.Action != policy.ActAdd && it.Action != policy.ActUpdate {
			last = e.LastUpdated
		}
		docs = append(docs, mirror.Doc{PolicyName: it.PolicyName, SHA: it.SHA, Path: it.Path, LastUpdated: last})
	}
	for _, rp := range m.drift.Upload { // the registry's version, read by its blob sha
		e := reg.entries[rp.PolicyName]
		r.log.Info("content mirror drift", logkey.Policy, rp.PolicyName, logkey.Reason, string(rp.Reason))
		docs = append(docs, mirror.Doc{PolicyName: rp.PolicyName, SHA: e.SHA, Path: e.Path, LastUpdated: e.LastUpdated})
	}
	return docs
}

// mirrorDelete is the mirror step after the registry's deletes: the
// objects of the deleted policies whose registry deletes landed, then the
// foreign objects a full run found under the prefix. It returns the
// failures, by policy name (by key for a foreign object); a run out of
// time sends none (they wait, as the deadline's cuts do).
func (r *run) mirrorDelete(ctx context.Context, m *mirrorRun, plan policy.Plan, registryFailed func(string) bool) map[string]error {
	if m == nil {
		return nil
	}
	r.resolveAliases(ctx, m, plan, registryFailed)
	defer m.recount(ctx, r) // after the deletes, whether any
	owner, keys := m.toDelete(plan, registryFailed)
	if len(keys) == 0 {
		return nil
	}
	var perKey map[string]error
	err := error(errNoTime) // a run out of time sends none: they wait
	if !r.outOfTime(ctx) {
		perKey, err = m.target.Delete(ctx, keys)
	}
	failed := map[string]error{}
	for _, k := range keys {
		kerr := perKey[k]
		if perKey == nil && err != nil { // refused as a whole; else perKey names every key not deleted (mirror.Target)
			kerr = err
		}
		if kerr != nil {
			failed[owner[k]] = fmt.Errorf("content mirror: %w", kerr) // one the deadline cut waits (failures.addMirror)
			m.unrepaired = true
			if timeUp(kerr, deadlineOf(ctx)) {
				r.log.Warn("out of time: content delete left for the next run", logkey.Key, k, logkey.Error, kerr)
			} else {
				r.log.Error("content delete failed", logkey.Key, k, logkey.Error, kerr)
			}
			continue
		}
		m.deleted++
		delete(m.keys, k)
		if owner[k] == k {
			m.repaired++
		}
	}
	return failed
}

// toDelete are the keys mirrorDelete deletes and who owns each (a policy
// name, or a foreign object's own key): the objects of the deleted
// policies whose registry deletes landed, then a full run's foreign ones.
func (m *mirrorRun) toDelete(plan policy.Plan, registryFailed func(string) bool) (owner map[string]string, keys []string) {
	owner = map[string]string{}
	for _, it := range plan.Items {
		switch {
		case it.Action != policy.ActDelete:
			continue
		case registryFailed(it.PolicyName):
			// its policy: key may be gone though the name failed (its
			// queue: entry's removal did), and the next run, finding no
			// entry, would delete nothing: the next full run's listing
			// tells (the soak, seed 49243)
			m.unrepaired = true
			continue
		}
		k := mirror.Key(m.prefix, it.PolicyName)
		if mirror.ValidateKey(m.prefix, k) != nil {
			continue // never mirrored (Render refuses it), and one such key would refuse the whole call
		}
		owner[k] = it.PolicyName
		keys = append(keys, k)
	}
	for _, k := range m.drift.Delete {
		if _, ok := owner[k]; !ok {
			owner[k] = k
			keys = append(keys, k)
		}
	}
	return owner, keys
}

// recount lists the prefix once more at the end of a run that met
// aliases, and takes what it shows for the objects the mirror holds: which
// spelling a store keeps, and whether one object answers to two, is known
// only so (a reviewer found the counts wrong four ways when guessed).
func (m *mirrorRun) recount(ctx context.Context, r *run) {
	if !m.hadAliases || r.outOfTime(ctx) {
		return
	}
	listed, err := m.target.List(ctx)
	if err != nil {
		return
	}
	m.keys = make(map[string]bool, len(listed))
	for _, l := range listed {
		if strings.HasPrefix(l.Key, m.prefix) && !strings.HasSuffix(l.Key, "/") {
			m.keys[l.Key] = true
		}
	}
	m.counted = true
}

// resolveAliases tells, after the uploads, what each alias a full run
// listed is (mirror.Repairs.Aliases: a wanted key in another Unicode form).
// The alias of a policy the plan deletes goes with it. For the others the
// run lists once more: an alias gone from the listing was the policy's own
// object (R2 keeps one object for both spellings, and lists the one written
// last), and so is one listed with the ETag this run uploaded for its
// policy (a store that keeps the first spelling, such as a folder on
// macOS): nothing to delete, nothing to report. One listed beside the
// policy's own key with the same ETag is an exact duplicate (AWS S3, a
// folder on Linux): deleted, nothing lost, so no guard to pass. Any other
// is kept and reported: with other content beside the policy's key, for an
// operator (not ours to judge); untold (the listing failed, the run is out
// of time, the upload failed), for the next full run. Only a run that
// listed aliases lists again. (A reviewer found aliases never deleted
// leaving S3 runs partial for good, then duplicates of any content deleted
// past the mirror's guard, and R2 aliases of deleted policies reported.)
func (r *run) resolveAliases(ctx context.Context, m *mirrorRun, plan policy.Plan, registryFailed func(string) bool) {
	if len(m.drift.Aliases) == 0 {
		return
	}
	m.hadAliases = true
	gone := map[string]bool{}
	for _, it := range plan.Items {
		if it.Action == policy.ActDelete && !registryFailed(it.PolicyName) {
			gone[it.PolicyName] = true
		}
	}
	m.aliasLeft = map[string]string{}
	var listed []mirror.Listed
	var err error
	if r.outOfTime(ctx) {
		err = errNoTime
	} else {
		listed, err = m.target.List(ctx)
	}
	etags := make(map[string]string, len(listed))
	for _, l := range listed {
		etags[l.Key] = mirror.NormalizeETag(l.ETag)
	}
	m.drift.Aliases = slices.DeleteFunc(m.drift.Aliases, func(a string) bool {
		why := m.aliasFate(a, etags, gone, err != nil)
		if why != "" {
			m.aliasLeft[a] = why
		}
		return why == ""
	})
	if err != nil {
		r.log.Warn("content mirror: could not list again to tell its aliases: they stay", logkey.Error, err)
	}
	slices.Sort(m.drift.Delete)
}

// aliasFate is resolveAliases' decision for alias a, given the ETags the
// second listing shows (untold when it failed): "" when the alias is
// settled (nothing to do, or added to the deletes), else why it stays.
func (m *mirrorRun) aliasFate(a string, etags map[string]string, gone map[string]bool, untold bool) string {
	const notTold = "content mirror: object not deleted: its key is a policy's in another Unicode form, and the run could not tell whether it is the policy's own object: the next full run looks again"
	name, _ := mirror.PolicyNameOf(m.prefix, a)
	name = norm.NFC.String(name)
	key := mirror.Key(m.prefix, name) // the prefix as given, NFC or not (review)
	uploaded, _ := m.up.etag(name)
	own := mirror.NormalizeETag(uploaded) // the policy's own object's ETag: uploaded now, or recorded and not repaired
	if own == "" && !slices.ContainsFunc(m.drift.Upload, func(rp mirror.Repair) bool { return rp.PolicyName == name }) {
		own = mirror.NormalizeETag(m.want[name].ETag)
	}
	aliasETag, aliasListed := etags[a]
	keyETag, keyListed := etags[key]
	switch {
	case gone[name]:
		// its policy goes: on R2 the key's delete removes this object,
		// elsewhere the next full run finds it foreign, under the mirror's
		// guard (review: deleted here, other content passed the guard, and
		// R2 counted one object deleted twice)
		if !keyListed && own != "" && aliasETag == own {
			delete(m.keys, a) // the policy's own object, which its delete removes
		}
	case untold:
		return notTold
	case !aliasListed:
		delete(m.keys, a) // the policy's own object: counted once, by its key
		if keyListed {
			m.keys[key] = true // even when the upload's answer was lost (review)
		}
	case !keyListed && own != "" && aliasETag == own:
		delete(m.keys, a) // a store that keeps the first spelling written
	case keyListed && own != "" && aliasETag == own && keyETag == own:
		// an exact copy of the policy's own object, not of whatever the key
		// holds (review: a hand edit in both, its repair failing)
		m.drift.Delete = append(m.drift.Delete, a)
	case keyListed:
		return "content mirror: object not deleted: its key is a policy's in another Unicode form, with other content than the policy's own object beside it; an operator must remove it"
	default:
		return notTold
	}
	return ""
}

// unsafeLeft are the foreign objects a full run found under the prefix
// that no target may delete (mirror.Repairs.Unsafe: the key could resolve
// outside the prefix; Aliases: on R2 the key is a policy's), as failures by key: the run is partial naming them
// and the mirror not converged, so that each run is full and says so
// again until an operator removes them (review: only a log line said so,
// and the run recorded success). Nothing outside the prefix is deleted.
func (m *mirrorRun) unsafeLeft() map[string]string {
	if m == nil || len(m.drift.Unsafe)+len(m.drift.Aliases)+len(m.unjudged) == 0 {
		return nil
	}
	m.unrepaired = true
	left := make(map[string]string, len(m.drift.Unsafe)+len(m.drift.Aliases)+len(m.unjudged))
	for _, k := range m.unjudged {
		// by its policy's name, which the registry may publish (its read
		// may lag); by its key when the name could be no registry key
		// (withoutForeign then keeps it out of what is owed)
		name, _ := mirror.PolicyNameOf(m.prefix, k)
		if !policy.KeyFits(name) || !utf8.ValidString(name) {
			name = k
		}
		left[name] = "content mirror: object " + k + " not deleted: the registry read held no policy and no run record, which a registry whose reads lag may show; the next full run judges it"
	}
	for _, k := range m.drift.Unsafe {
		left[k] = "content mirror: foreign object not deleted: its key could resolve outside " + m.prefix + "; an operator must remove it"
	}
	for _, k := range m.drift.Aliases { // mirror.Repairs.Aliases that resolveAliases kept
		left[k] = m.aliasLeft[k]
		if left[k] == "" { // not told: the run did not reach mirrorDelete
			left[k] = "content mirror: object not deleted: its key is a policy's in another Unicode form; the next full run looks again"
		}
	}
	return left
}

// withoutForeign is names (what the run owes: owed) less the keys of the
// foreign objects it named as failures (mirrorDelete, unsafeLeft): they
// are no policy, no registry entry is owed for them, and the next run
// reading one by name would fail every run when the key is longer than
// the registry's keys may be. The mirror left unconverged is what makes
// the next run list them again.
func (m *mirrorRun) withoutForeign(names []string) []string {
	foreign := func(name string) bool {
		_, del := slices.BinarySearch(m.drift.Delete, name)
		_, unsafe := slices.BinarySearch(m.drift.Unsafe, name)
		_, alias := slices.BinarySearch(m.drift.Aliases, name)
		_, unjudged := slices.BinarySearch(m.unjudged, name)
		return del || unsafe || alias || unjudged
	}
	if m == nil || !slices.ContainsFunc(names, foreign) {
		return names
	}
	return slices.DeleteFunc(slices.Clone(names), foreign) // names may be the last run's
}

// withContentETag records in e the ETag of the object the run uploaded for
// it; an add, update or move the run did not upload (no mirror) records
// none, so a mirror turned on later does not take an old object for this
// version (a move's object names its path).
func withContentETag(e policy.Entry, it policy.Item, m *mirrorRun) policy.Entry {
	if m != nil {
		if etag, ok := m.up.etag(it.PolicyName); ok {
			e.ContentETag = etag
			return e
		}
	}
	if it.Action == policy.ActAdd || it.Action == policy.ActUpdate || it.Action == policy.ActMove {
		e.ContentETag = ""
	}
	return e
}

// mirrorMode makes a run full when the mirror needs the listing: it was
// just turned on (or pointed elsewhere), or the last run left it with
// drift no queue entry records.
func (r *run) mirrorMode(mode, reason string, prev *policy.RunSummary) (string, string) {
	if r.Mirror == nil || mode == differ.ModeFull || prev == nil {
		return mode, reason
	}
	pm := prev.Mirror
	switch {
	case pm == nil || pm.Target != r.Mirror.Name():
		return differ.ModeFull, "content mirror new: fill it"
	case pm.Converged == "":
		return differ.ModeFull, "content mirror not converged: repair it"
	}
	return mode, reason
}

// mirrorSummary is what the run did to the mirror, for the record.
func (r *run) mirrorSummary(m *mirrorRun, rep report, prev *policy.RunSummary) *policy.MirrorSummary {
	if m == nil {
		return nil
	}
	st := m.target.Stats()
	done := m.done
	if done == nil {
		done = &mirrorDone{}
	}
	s := &policy.MirrorSummary{
		Target:        m.target.Name(),
		Uploaded:      done.uploaded + len(m.up.etags),
		Deleted:       m.deleted,
		BytesUploaded: st.BytesUploaded - m.base.BytesUploaded,
		Repaired:      m.repaired,
		Objects:       m.listed,
	}
	if prev != nil && prev.Mirror != nil && prev.Mirror.Target == s.Target {
		s.Converged, s.LastRepair = prev.Mirror.Converged, prev.Mirror.LastRepair
		if s.Objects < 0 {
			s.Objects = prev.Mirror.Objects
		}
	}
	at := r.start.Format(policy.TimeLayout)
	if m.repaired > 0 {
		s.LastRepair = at
	}
	if m.hadAliases && !m.counted { // which spelling the store kept is not known: the last count stands (review)
		s.Objects = -1
		if prev != nil && prev.Mirror != nil && prev.Mirror.Target == s.Target {
			s.Objects = prev.Mirror.Objects
		}
	} else if m.listed >= 0 && rep.applied != nil { // listed, then written: what the bucket holds now (review: a run that did not converge kept the count listed before it)
		for name := range m.up.etags {
			if !m.counted { // a recount's listing holds them, under the spelling the store keeps
				m.keys[mirror.Key(m.prefix, name)] = true
			}
		}
		s.Objects = done.objects + len(m.keys)
	}
	switch {
	case m.unrepaired, done.stray, m.strayUploads(rep.applied):
		s.Converged = ""
	case m.listed >= 0 && rep.applied != nil:
		s.Converged = at
	}
	if r.opt.DryRun {
		s.Uploaded, s.Deleted = m.wouldDo(rep)
	}
	return s
}

// strayUploads reports whether the run may have left in the mirror a
// version the registry does not publish: it sent an object (the titles
// step uploads before the guard, the budget and the writes; a put whose
// answer was lost may have landed) for a policy whose registry write did
// not land — it failed, waits, or the run ended first. No queue entry
// names such an object once the head moves back: only a full run's
// listing finds it. A repair uploads the registry's own version.
func (m *mirrorRun) strayUploads(applied *policy.Plan) bool {
	if len(m.up.sent) == 0 {
		return false
	}
	published := map[string]bool{}
	for _, rp := range m.drift.Upload {
		published[rp.PolicyName] = true
	}
	if applied != nil {
		for _, it := range applied.Items {
			if it.Action != policy.ActDelete {
				published[it.PolicyName] = true
			}
		}
	}
	for name := range m.up.sent {
		if !published[name] {
			return true
		}
	}
	return false
}

// wouldDo is what a dry run's mirror would get: an upload for every put of
// the plan and every repair, a delete for every deleted policy and every
// foreign object.
func (m *mirrorRun) wouldDo(rep report) (uploads, deletes int) {
	if rep.titled != nil {
		for _, it := range rep.titled.plan.Items {
			if it.Action == policy.ActDelete {
				deletes++
			} else if it.Path != "" {
				uploads++
			}
		}
	}
	return uploads + len(m.drift.Upload), deletes + len(m.drift.Delete)
}

// repairedEntries are the entries of the policies a full run's repair
// uploaded again outside the plan: each records its new object's ETag.
func repairedEntries(reg registryState, m *mirrorRun) []op {
	if m == nil {
		return nil
	}
	var ops []op
	for _, rp := range m.drift.Upload {
		etag, ok := m.up.etag(rp.PolicyName)
		e, known := reg.entries[rp.PolicyName]
		if !ok || !known {
			continue
		}
		e.ContentETag = etag
		ops = append(ops, newOp(rp.PolicyName, registry.PutPolicy(e)))
	}
	return ops
}
