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
// does nothing. It is a read: nothing is written anywhere.
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
	if s.threshold >= 0 && files <= s.threshold {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &prefetch{commit: commit, done: make(chan struct{}), cancel: cancel}
	s.ahead.put(p)
	go p.fetch(ctx, s)
	return func() {
		if s.ahead.take(commit) == p {
			p.drop()
		}
	}
}

// prefetch is an archive read started ahead (PrefetchArchive).
type prefetch struct {
	commit string
	done   chan struct{} // closed when the link and the answer's headers are in
	cancel context.CancelFunc
	link   *url.URL
	err    error          // the link's error
	resp   *http.Response // the download's answer (200); nil when it failed
}

// fetch asks for the link and the download; a download that is not
// answered within the idle timeout, or answers another status, is left for
// the read to ask again.
func (p *prefetch) fetch(ctx context.Context, s *Source) {
	defer close(p.done)
	if p.link, p.err = s.archiveLink(ctx, p.commit); p.err != nil {
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

// put keeps p, dropping an earlier prefetch of the same commit.
func (a *prefetches) put(p *prefetch) {
	a.mu.Lock()
	old := a.by[p.commit]
	if a.by == nil {
		a.by = map[string]*prefetch{}
	}
	a.by[p.commit] = p
	a.mu.Unlock()
	if old != nil {
		old.drop()
	}
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
