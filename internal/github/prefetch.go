package github

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// PrefetchArchive starts reading commit's tarball ahead of the read that
// will need it: the archive link, then the download up to its answer's
// headers, so that a run makes these two round trips beside its registry
// reads instead of after them (docs/bench.md, "Round trips"). It starts
// only when files, how many files the caller expects to read, is more than
// the archive threshold (a read of that many takes the archive); else it
// does nothing. A negative files means every file, how many not known yet:
// the link is asked at once, beside the commit's tree (a link is one
// request whose redirect is not followed), the download once a later call
// gives a count over the threshold, or the read comes, or — once
// DownloadWhenListed let it — a listing of the tree shows more policy
// files than the threshold as it streams by. A read of no more files than
// the threshold reads blobs and leaves the link unused. It is a read:
// nothing is written anywhere.
//
// The next Titles, TitlesWith or Contents of commit that reads the archive
// takes what the prefetch got: its link (or the link's error, as its own
// request would have had it) and its open answer, whose body it then reads
// under the usual budget, idle and archive timeouts (the idle timeout runs
// from the moment the read begins; before, the body waits unread). A
// prefetched download that fails is asked again like any other. stop lets
// go of what no read took: it cancels the requests and closes the body.
// Call it once the reads are done.
func (s *Source) PrefetchArchive(ctx context.Context, commit string, files int) (stop func()) {
	if files >= 0 && s.threshold >= 0 && files <= s.threshold {
		return func() {}
	}
	p, pctx, fresh := s.ahead.start(ctx, commit)
	if fresh {
		go p.fetch(pctx, s)
	}
	if files >= 0 {
		p.mark(true, true)
	}
	return func() {
		if s.ahead.take(commit) == p {
			p.drop()
		}
	}
}

// DownloadWhenListed lets the prefetch of commit whose count was not known
// (PrefetchArchive with files < 0) ask for the download as soon as a
// listing of the commit's tree (Tree) has shown more policy files than the
// threshold, as it streams by, instead of once a later call gives the
// count: a run calls it once it may read (its lease taken). A tree of no
// more files downloads nothing. It does nothing when no prefetch of commit
// is going.
func (s *Source) DownloadWhenListed(commit string) {
	s.ahead.lookup(commit).mark(false, true)
}

// prefetch is an archive read started ahead (PrefetchArchive).
type prefetch struct {
	commit string
	cancel context.CancelFunc
	wanted chan struct{} // closed when the download is to be asked
	once   sync.Once
	mu     sync.Mutex
	many   bool          // a listing of the tree showed more files than the threshold
	let    bool          // the caller lets the download go once many (DownloadWhenListed)
	done   chan struct{} // closed when the link and the answer's headers are in
	link   *url.URL
	err    error          // the link's error
	resp   *http.Response // the download's answer (200); nil when it failed
}

// download asks for the download once the link is in (nil-safe).
func (p *prefetch) download() {
	if p != nil {
		p.once.Do(func() { close(p.wanted) })
	}
}

// mark records that a listing of the tree showed more files than the
// threshold (many) or that the caller lets the download go once one does
// (let), and asks for the download once both are so (nil-safe).
func (p *prefetch) mark(many, let bool) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.many, p.let = p.many || many, p.let || let
	if p.many && p.let {
		p.download()
	}
}

// fetch asks for the link and, when wanted, the download; a download that
// is not answered within the idle timeout, or answers another status, is
// left for the read to ask again.
func (p *prefetch) fetch(ctx context.Context, s *Source) {
	defer close(p.done)
	if p.link, p.err = s.archiveLink(ctx, p.commit); p.err != nil {
		return
	}
	select {
	case <-p.wanted:
	case <-ctx.Done():
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.link.String(), nil)
	if err != nil {
		return
	}
	idle := time.AfterFunc(s.idle, p.cancel)
	resp, err := s.downloads.Do(req)
	if !idle.Stop() || err != nil {
		if err == nil {
			resp.Body.Close()
		}
		return
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return
	}
	p.resp = resp
}

// wait waits for the link and the headers, or for ctx.
func (p *prefetch) wait(ctx context.Context) error {
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// answer hands over the open answer once (nil: none, or taken).
func (p *prefetch) answer() *http.Response {
	if p == nil {
		return nil
	}
	resp := p.resp
	p.resp = nil
	return resp
}

// drop cancels the prefetch and closes an answer no read took.
func (p *prefetch) drop() {
	p.cancel()
	<-p.done
	if resp := p.answer(); resp != nil {
		resp.Body.Close()
	}
}

// prefetches are the archive reads started ahead, by commit.
type prefetches struct {
	mu sync.Mutex
	by map[string]*prefetch
}

// start returns the prefetch of commit, made (fresh, with the context its
// requests take, under ctx) when there is none.
func (a *prefetches) start(ctx context.Context, commit string) (p *prefetch, pctx context.Context, fresh bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p := a.by[commit]; p != nil {
		return p, nil, false
	}
	if a.by == nil {
		a.by = map[string]*prefetch{}
	}
	p = &prefetch{commit: commit, wanted: make(chan struct{}), done: make(chan struct{})}
	pctx, p.cancel = context.WithCancel(ctx)
	a.by[commit] = p
	return p, pctx, true
}

// armer is a tree listing's watch for a prefetch of commit: told how many
// policy files the listing has shown so far, it marks the prefetch once
// they are more than threshold. nil when no prefetch of commit waits.
func (a *prefetches) armer(commit string, threshold int) func(n int) {
	a.mu.Lock()
	p := a.by[commit]
	a.mu.Unlock()
	if p == nil {
		return nil
	}
	return func(n int) {
		if threshold < 0 || n > threshold {
			p.mark(true, false)
		}
	}
}

// lookup returns the prefetch of commit (nil: none).
func (a *prefetches) lookup(commit string) *prefetch {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.by[commit]
}

// take removes and returns the prefetch of commit (nil: none).
func (a *prefetches) take(commit string) *prefetch {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.by[commit]
	delete(a.by, commit)
	return p
}

// prefetchedLink is the link a prefetch got, or its error; ok is false
// when p is nil (no prefetch: the read asks).
func (p *prefetch) prefetchedLink(ctx context.Context) (link *url.URL, ok bool, err error) {
	if p == nil {
		return nil, false, nil
	}
	p.download()
	if err := p.wait(ctx); err != nil {
		return nil, true, err
	}
	return p.link, true, p.err
}

// readPrefetched reads the prefetched answer's body as download reads its
// own (within the archive timeout and the idle timeout, from now).
func (s *Source) readPrefetched(ctx context.Context, p *prefetch, resp *http.Response, want wantedFiles, budget int64, r *reading) error {
	defer p.cancel()
	defer resp.Body.Close()
	ctx, w := s.watched(ctx, s.archiveTimeout)
	defer w.stop()
	// the answer belongs to the prefetch's request: what ends the watch
	// ends it
	defer context.AfterFunc(ctx, p.cancel)()
	return s.downloadError(w.why(ctx, untar(w.body(resp.Body), want, budget, r)))
}
