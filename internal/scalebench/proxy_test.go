package scalebench

import (
	"compress/gzip"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// scaleProxy stands in front of a fake API: it delays every request by the
// bench's latency, counts requests by kind and the connections clients
// open, and passes the request on. The fakes stay as they are.
type scaleProxy struct {
	srv   *httptest.Server
	delay time.Duration
	kind  func(r *http.Request) string
	// lease, when set, follows the lease writes passing through
	lease *leaseWatch

	mu     sync.Mutex
	counts map[string]int
	log    []scaleRequest
	conns  atomic.Int64
}

// scaleRequest is one request the proxy passed on: when it arrived and
// when its answer was written, with the delay included.
type scaleRequest struct {
	kind       string
	start, end time.Time
	sent, got  int64 // request and response body bytes
}

// countingWriter counts the bytes of an answer.
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (w *countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

// Flush lets a streamed download through as it comes.
func (w *countingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// newScaleProxy proxies to target (scheme and host; the path is kept).
// serve, when not nil, answers the requests it claims instead of the fake.
// rewrite, when not nil, edits the fake's answers (a Location to the fake).
func newScaleProxy(tb testing.TB, target string, delay time.Duration, kind func(*http.Request) string,
	serve func(http.ResponseWriter, *http.Request) bool, rewrite func(*http.Response) error) *scaleProxy {
	tb.Helper()
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatal(err)
	}
	u.Path = ""
	p := &scaleProxy{delay: delay, kind: kind, counts: map[string]int{}}
	rp := &httputil.ReverseProxy{
		Rewrite:        func(pr *httputil.ProxyRequest) { pr.SetURL(u) },
		ModifyResponse: rewrite,
		FlushInterval:  -1, // stream downloads as they come
		// The proxy must not be the bottleneck: keep a connection per
		// request in flight, whatever the client does.
		Transport: &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true},
	}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		kind, start := p.kind(r), time.Now()
		p.mu.Lock()
		p.counts[kind]++
		p.mu.Unlock()
		w := &countingWriter{ResponseWriter: rw}
		defer func() {
			p.mu.Lock()
			p.log = append(p.log, scaleRequest{kind: kind, start: start, end: time.Now(), sent: r.ContentLength, got: w.n})
			p.mu.Unlock()
		}()
		if p.delay > 0 {
			t := time.NewTimer(p.delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		if p.lease != nil {
			p.lease.see(r)
		}
		if serve != nil && serve(w, r) {
			return
		}
		rp.ServeHTTP(w, r)
	}))
	p.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			p.conns.Add(1)
		}
	}
	p.srv.Start()
	tb.Cleanup(p.srv.Close)
	return p
}

// URL is the proxy's base URL, without a trailing slash.
func (p *scaleProxy) URL() string { return p.srv.URL }

// take returns the requests by kind and the connections opened since the
// last take, and starts counting afresh.
func (p *scaleProxy) take() (counts map[string]int, conns int) {
	counts, _, conns = p.takeLog()
	return counts, conns
}

// takeLog is take with the requests themselves, in the order they ended.
func (p *scaleProxy) takeLog() (counts map[string]int, log []scaleRequest, conns int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	counts, log = maps.Clone(p.counts), p.log
	clear(p.counts)
	p.log = nil
	return counts, log, int(p.conns.Swap(0))
}

// githubKind names a GitHub request by endpoint.
func githubKind(r *http.Request) string {
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/_codeload/"):
		return "archive"
	case strings.Contains(p, "/tarball"):
		return "archive-link"
	case strings.Contains(p, "/commits/"):
		return "head"
	case strings.Contains(p, "/git/trees/"):
		return "tree"
	case strings.Contains(p, "/compare/"):
		return "compare"
	case strings.Contains(p, "/git/blobs/"):
		return "blob"
	}
	return "other"
}

// cloudflareKind names a Cloudflare request by endpoint.
func cloudflareKind(r *http.Request) string {
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/keys"):
		return "list"
	case strings.HasSuffix(p, "/bulk") && r.Method == http.MethodPut:
		return "bulk-put"
	case strings.HasSuffix(p, "/bulk/delete") || (strings.HasSuffix(p, "/bulk") && r.Method == http.MethodDelete):
		return "bulk-delete"
	case strings.HasSuffix(p, "/bulk/get"):
		return "bulk-get"
	case strings.Contains(p, "/values/"):
		return strings.ToLower(r.Method) + "-value"
	case strings.Contains(p, "/metadata/"):
		return "get-metadata"
	}
	return "other"
}

// newGitHubProxy delays the fake GitHub. The archive link's Location is
// turned to the proxy, and the proxy serves the download itself, streamed
// from git (see streamArchive): the same tarball the fake would send,
// counted and delayed like every other request.
func newGitHubProxy(tb testing.TB, sr *scaleRepo, fakeURL string, delay time.Duration) *scaleProxy {
	tb.Helper()
	fake := strings.TrimSuffix(fakeURL, "/")
	env := scaleGitEnv(tb)
	var p *scaleProxy
	serve := func(w http.ResponseWriter, r *http.Request) bool {
		rest, ok := strings.CutPrefix(r.URL.Path, "/_codeload/")
		if !ok {
			return false
		}
		parts := strings.Split(rest, "/") // owner, name, tar.gz, sha
		if len(parts) != 4 || parts[2] != "tar.gz" || len(parts[3]) != 40 {
			http.NotFound(w, r)
			return true
		}
		w.Header().Set("Content-Type", "application/x-gzip")
		w.WriteHeader(http.StatusOK)
		// Fast gzip: the bench's share of the two cores is not the program's.
		zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
		if err := streamArchive(sr.repo.Dir(), env, parts[0]+"-"+parts[1]+"-"+parts[3][:7]+"/", parts[3], zw); err != nil {
			if r.Context().Err() == nil { // else the client stopped reading: its right
				tb.Logf("archive: %v", err)
			}
			return true
		}
		_ = zw.Close()
		return true
	}
	rewrite := func(resp *http.Response) error {
		if loc := resp.Header.Get("Location"); strings.HasPrefix(loc, fake) {
			resp.Header.Set("Location", p.URL()+strings.TrimPrefix(loc, fake))
		}
		return nil
	}
	p = newScaleProxy(tb, fakeURL, delay, githubKind, serve, rewrite)
	return p
}
