package githubtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Endpoint kinds, as counted by Requests and logged by Log.
const (
	KindCommitSHA   = "commit-sha"   // GET commits/{ref} with the sha media type
	KindCommit      = "commit"       // GET commits/{ref} as JSON
	KindBranch      = "branch"       // GET branches/{branch}
	KindTree        = "tree"         // GET git/trees/{sha}
	KindCompare     = "compare"      // GET compare/{base}...{head}
	KindBlob        = "blob"         // GET git/blobs/{sha}
	KindArchiveLink = "archive-link" // GET tarball/{ref}
	KindArchive     = "archive"      // GET the download the archive link points at
	KindUnknown     = "unknown"      // anything else (answered 404)
)

// MaxCompareFiles is how many files GitHub lists in a compare at most.
const MaxCompareFiles = 300

// GitHub's limits of a recursive tree listing: "100,000 entries with a
// maximum size of 7 MB" (REST API, "Get a tree"). Which bytes the 7 MB
// counts, and whether it means 7 MiB, GitHub does not say: the fake
// counts the tree array's JSON, in MiB.
const (
	MaxTreeEntries = 100_000
	MaxTreeBytes   = 7 << 20
)

// Server is a fake GitHub REST API serving one repository. Set its exported
// fields before issuing requests.
type Server struct {
	// TruncateTreesOver and TruncateTreesOverBytes bound a recursive tree
	// listing: one with more entries, or whose tree array would take more
	// bytes of JSON, answers only the entries that fit and "truncated":
	// true. Zero means GitHub's own limits, 100,000 entries and 7 MB
	// (MaxTreeEntries, MaxTreeBytes): a tree of some 25,000 policies with
	// long Korean paths is already over 7 MB. A negative value never cuts.
	TruncateTreesOver      int
	TruncateTreesOverBytes int
	// Token, when set, is the token API requests must carry.
	Token string
	// ArchiveExtra are entries added to every tarball before the
	// repository's own (see Generated).
	ArchiveExtra []Generated
	// CompareWithoutFiles leaves the files key out of compare answers, as
	// GitHub does when it cannot list a comparison's files (the totals,
	// ahead_by and total_commits, still say what changed).
	CompareWithoutFiles bool

	owner, name string
	repo        *Repo
	ts          *httptest.Server
	done        chan struct{}

	mu     sync.Mutex
	counts Counts
	sent   Counts // body bytes written, by endpoint kind
	log    []Request
	faults []*faultRule
	// inFlight counts the requests being answered; last is when the
	// latest began or ended (Settle)
	inFlight int
	last     time.Time
}

// Request is one request the server received.
type Request struct {
	Method string
	Path   string // decoded URL path
	Query  string // raw query
	Kind   string
	Status int // 0 when the request hung
	Header http.Header
}

// Counts is a number of requests per endpoint kind.
type Counts map[string]int

// Total is the number of requests of every kind.
func (c Counts) Total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// NewServer serves repo as {owner}/{name} until the test ends.
func NewServer(t testing.TB, owner, name string, repo *Repo) *Server {
	t.Helper()
	s := &Server{owner: owner, name: name, repo: repo, done: make(chan struct{}), counts: Counts{}, sent: Counts{}}
	s.ts = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.ts.Close)
	// Registered last so it runs first: releases hanging handlers before Close waits for them.
	t.Cleanup(func() { close(s.done) })
	return s
}

// URL is the API base URL with a trailing slash (go-github's BaseURL).
func (s *Server) URL() string { return s.ts.URL + "/" }

// Client is an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.ts.Client() }

// Requests returns the number of requests per endpoint kind since the start
// or the last ResetRequests.
func (s *Server) Requests() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.counts)
}

// BytesSent returns the body bytes written per endpoint kind since the
// start or the last ResetRequests: what a client made the server produce
// (a client that stops reading early stops it, give or take the socket's
// buffers).
func (s *Server) BytesSent() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.sent)
}

// Log returns the requests received since the start or the last ResetRequests.
func (s *Server) Log() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// Settle waits until no request has been in flight for quiet, or 5 s:
// a client that gave up on a request (a run's read ahead, dropped when the
// run ended) may have sent it already, and the server answers it after.
// Call it before ResetRequests when the next requests must be a later
// run's alone.
func (s *Server) Settle(quiet time.Duration) {
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(quiet / 10) {
		s.mu.Lock()
		idle := s.inFlight == 0 && time.Since(s.last) >= quiet
		s.mu.Unlock()
		if idle {
			return
		}
	}
}

// ResetRequests forgets the counts and the log (fault rules stay).
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts = Counts{}
	s.sent = Counts{}
	s.log = nil
}

type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

// Flush lets a streamed answer reach the client (see stallWriter).
func (w *statusWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// route is a parsed request path.
type route struct {
	kind        string
	owner, name string
	arg         string // ref, sha, basehead
}

func parseRoute(r *http.Request) route {
	p := strings.TrimPrefix(r.URL.Path, "/api/v3")
	if rest, ok := strings.CutPrefix(p, "/_codeload/"); ok {
		parts := strings.SplitN(rest, "/", 4)
		if len(parts) == 4 && parts[2] == "tar.gz" {
			return route{kind: KindArchive, owner: parts[0], name: parts[1], arg: parts[3]}
		}
		return route{kind: KindUnknown}
	}
	rest, ok := strings.CutPrefix(p, "/repos/")
	if !ok {
		return route{kind: KindUnknown}
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 3 {
		return route{kind: KindUnknown}
	}
	rt := route{owner: parts[0], name: parts[1], kind: KindUnknown}
	tail := parts[2]
	cut := func(prefix string) bool {
		if a, ok := strings.CutPrefix(tail, prefix); ok {
			rt.arg = a
			return true
		}
		return false
	}
	switch {
	case cut("commits/"):
		rt.kind = KindCommit
		if strings.Contains(r.Header.Get("Accept"), "vnd.github.v3.sha") || strings.Contains(r.Header.Get("Accept"), "vnd.github.sha") {
			rt.kind = KindCommitSHA
		}
	case cut("branches/"):
		rt.kind = KindBranch
	case cut("git/trees/"):
		rt.kind = KindTree
	case cut("git/blobs/"):
		rt.kind = KindBlob
	case cut("compare/"):
		rt.kind = KindCompare
	case tail == "tarball" || cut("tarball/"):
		rt.kind = KindArchiveLink
	}
	return rt
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	rt := parseRoute(r)
	sw := &statusWriter{ResponseWriter: w}
	total, fault, answered := s.record(r, rt)
	defer func() { answered(sw.status, sw.bytes) }()
	setRateLimitHeaders(sw.Header(), total)

	var w2 http.ResponseWriter = sw
	switch {
	case fault != nil && fault.Stall:
		w2 = &stallWriter{statusWriter: sw, left: fault.StallAfter, wait: func() { s.hang(r) }}
	case fault != nil:
		s.fail(sw, r, fault)
		return
	}
	if r.Method != http.MethodGet {
		writeError(sw, http.StatusNotFound, "Not Found")
		return
	}
	if !s.authorized(w2, r, rt) {
		return
	}
	if rt.kind == KindUnknown || !strings.EqualFold(rt.owner, s.owner) || !strings.EqualFold(rt.name, s.name) {
		writeError(w2, http.StatusNotFound, "Not Found")
		return
	}
	s.dispatch(w2, r, rt)
}

// record counts and logs a request and draws its fault, under the lock. It
// returns the number of requests so far, the fault (nil for none) and
// answered, which records the status the request was answered with and the
// body bytes written.
func (s *Server) record(r *http.Request, rt route) (total int, fault *Fault, answered func(status, bytes int)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[rt.kind]++
	s.inFlight++
	s.last = time.Now()
	idx := len(s.log)
	s.log = append(s.log, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Kind: rt.kind, Header: r.Header.Clone()})
	answered = func(status, bytes int) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.inFlight--
		s.last = time.Now()
		s.sent[rt.kind] += bytes
		if idx < len(s.log) && s.log[idx].Kind == rt.kind {
			s.log[idx].Status = status
		}
	}
	return s.counts.Total(), s.nextFault(rt.kind, r.URL.Path), answered
}

// setRateLimitHeaders sets the rate-limit headers GitHub sends with every
// answer, total requests into the hour's 5,000.
func setRateLimitHeaders(h http.Header, total int) {
	h.Set("X-RateLimit-Limit", "5000")
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(5000-total, 1)))
	h.Set("X-RateLimit-Used", strconv.Itoa(min(total, 4999)))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
	h.Set("X-GitHub-Media-Type", "github.v3; format=json")
}

// fail answers with fault: its status, headers and body, or no answer at all
// until the client gives up (or the server closes, or a minute passes).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, fault *Fault) {
	if fault.Hang {
		s.hang(r)
		return
	}
	for k, v := range fault.Header {
		w.Header()[k] = v
	}
	writeJSONRaw(w, fault.Status, fault.Body)
}

// hang waits until the client gives up (or the server closes, or a minute passes).
func (s *Server) hang(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.done:
	case <-time.After(time.Minute):
	}
}

// authorized checks the token of an API request when Server.Token is set:
// without one GitHub answers 404 (a private repository is not shown), with a
// wrong one 401. The archive download carries its own signature instead.
// It answers the request when it returns false.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request, rt route) bool {
	if rt.kind == KindArchive || s.Token == "" {
		return true
	}
	switch r.Header.Get("Authorization") {
	case "Bearer " + s.Token, "token " + s.Token:
		return true
	case "":
		writeError(w, http.StatusNotFound, "Not Found")
	default:
		writeJSONRaw(w, http.StatusUnauthorized, jsonMessage("Bad credentials", "https://docs.github.com/rest"))
	}
	return false
}

// dispatch answers a request for this repository by its endpoint kind.
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request, rt route) {
	switch rt.kind {
	case KindCommitSHA:
		s.serveCommitSHA(w, r, rt.arg)
	case KindCommit:
		s.serveCommit(w, r, rt.arg)
	case KindBranch:
		s.serveBranch(w, rt.arg)
	case KindTree:
		s.serveTree(w, r, rt.arg)
	case KindCompare:
		s.serveCompare(w, r, rt.arg)
	case KindBlob:
		s.serveBlob(w, r, rt.arg)
	case KindArchiveLink:
		s.serveArchiveLink(w, rt.arg)
	case KindArchive:
		s.serveArchive(w, r, rt.arg)
	}
}

func jsonMessage(msg, doc string) string {
	m := map[string]string{"message": msg}
	if doc != "" {
		m["documentation_url"] = doc
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func writeJSONRaw(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSONRaw(w, status, jsonMessage(msg, "https://docs.github.com/rest"))
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSONRaw(w, http.StatusOK, string(b))
}

func (s *Server) api(format string, args ...any) string {
	return s.ts.URL + "/repos/" + s.owner + "/" + s.name + "/" + fmt.Sprintf(format, args...)
}

// web is the address GitHub's web pages give a file of a commit: kind
// "blob" (the page) or "raw" (the bytes).
func (s *Server) web(kind, commit, path string) string {
	return s.ts.URL + "/" + s.owner + "/" + s.name + "/" + kind + "/" + commit + "/" + path
}

func (s *Server) serveCommitSHA(w http.ResponseWriter, r *http.Request, ref string) {
	sha, ok := s.repo.resolve(ref, "commit")
	if !ok {
		writeError(w, http.StatusUnprocessableEntity, "No commit found for SHA: "+ref)
		return
	}
	etag := `"` + sha + `"`
	w.Header().Set("ETag", etag)
	if inm := r.Header.Get("If-None-Match"); inm == etag || inm == sha || inm == "W/"+etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.github.sha; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, sha)
}

// commitJSON is the part of GitHub's commit object go-github reads.
type commitJSON struct {
	SHA     string      `json:"sha"`
	URL     string      `json:"url"`
	Commit  commitInner `json:"commit"`
	Parents []shaURL    `json:"parents"`
}

type commitInner struct {
	Message   string    `json:"message"`
	Tree      shaURL    `json:"tree"`
	Author    signature `json:"author"`
	Committer signature `json:"committer"`
}

type signature struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Date  string `json:"date"`
}

type shaURL struct {
	SHA string `json:"sha"`
	URL string `json:"url,omitempty"`
}

// commits reads commit objects with git log (args select them).
func (s *Server) commits(args ...string) ([]commitJSON, error) {
	out, err := s.repo.read(append([]string{"log", "-z", logFormat}, args...)...)
	if err != nil {
		return nil, err
	}
	var list []commitJSON
	for rec := range strings.SplitSeq(string(out), "\x00") {
		if rec == "" {
			continue
		}
		f := strings.SplitN(rec, "\x1f", 10)
		if len(f) != 10 {
			return nil, fmt.Errorf("git log: bad record %q", rec)
		}
		c := commitJSON{
			SHA: f[0],
			URL: s.api("commits/%s", f[0]),
			Commit: commitInner{
				Message:   strings.TrimRight(f[9], "\n"),
				Tree:      shaURL{SHA: f[1], URL: s.api("git/trees/%s", f[1])},
				Author:    signature{Name: f[3], Email: f[4], Date: f[5]},
				Committer: signature{Name: f[6], Email: f[7], Date: f[8]},
			},
			Parents: []shaURL{},
		}
		for p := range strings.FieldsSeq(f[2]) {
			c.Parents = append(c.Parents, shaURL{SHA: p, URL: s.api("commits/%s", p)})
		}
		list = append(list, c)
	}
	return list, nil
}

func (s *Server) commit(sha string) (commitJSON, error) {
	list, err := s.commits("-1", sha, "--")
	if err != nil {
		return commitJSON{}, err
	}
	if len(list) != 1 {
		return commitJSON{}, fmt.Errorf("git log %s: %d commits", sha, len(list))
	}
	return list[0], nil
}

func (s *Server) serveCommit(w http.ResponseWriter, r *http.Request, ref string) {
	sha, ok := s.repo.resolve(ref, "commit")
	if !ok {
		writeError(w, http.StatusUnprocessableEntity, "No commit found for SHA: "+ref)
		return
	}
	c, err := s.commit(sha)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	parent := emptyTree // a root commit shows every file added
	if len(c.Parents) > 0 {
		parent = c.Parents[0].SHA
	}
	files, err := s.allDiffFiles(parent, sha)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	page, perPage := pageOf(r, MaxCommitFilesPerPage)
	files = files[:min(len(files), MaxCommitFiles)]
	from := min((page-1)*perPage, len(files))
	if from+perPage < len(files) {
		next := *r.URL
		q := next.Query()
		q.Set("page", strconv.Itoa(page+1))
		next.RawQuery = q.Encode()
		w.Header().Set("Link", fmt.Sprintf("<%s%s>; rel=\"next\"", strings.TrimSuffix(s.URL(), "/"), next.RequestURI()))
	}
	writeJSON(w, commitWithFiles{commitJSON: c, Files: files[from:min(from+perPage, len(files))]})
}

// emptyTree is git's empty tree, the parent a root commit is diffed against.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// MaxCommitFilesPerPage and MaxCommitFiles are how many files GitHub lists
// for one commit: 300 a page, 3,000 in all.
const (
	MaxCommitFilesPerPage = 300
	MaxCommitFiles        = 3000
)

// commitWithFiles is a commit as GET commits/{ref} answers: with the files
// it changes from its first parent, a page of them.
type commitWithFiles struct {
	commitJSON
	Files []compareFileJSON `json:"files"`
}

// pageOf reads the page and per_page query parameters (per_page at most
// limit, its default).
func pageOf(r *http.Request, limit int) (page, perPage int) {
	page, perPage = 1, limit
	if v, err := strconv.Atoi(r.URL.Query().Get("page")); err == nil && v > 0 {
		page = v
	}
	if v, err := strconv.Atoi(r.URL.Query().Get("per_page")); err == nil && v > 0 {
		perPage = min(v, limit)
	}
	return page, perPage
}

func (s *Server) serveBranch(w http.ResponseWriter, branch string) {
	sha, ok := s.repo.resolve("refs/heads/"+branch, "commit")
	if !ok {
		writeError(w, http.StatusNotFound, "Branch not found")
		return
	}
	c, err := s.commit(sha)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, map[string]any{"name": branch, "commit": c, "protected": false})
}

type treeEntryJSON struct {
	Path string `json:"path"`
	Mode string `json:"mode"`
	Type string `json:"type"`
	SHA  string `json:"sha"`
	Size *int64 `json:"size,omitempty"`
	URL  string `json:"url,omitempty"`
}

func (s *Server) serveTree(w http.ResponseWriter, r *http.Request, ref string) {
	tree, ok := s.repo.resolve(ref, "tree")
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	recursive := r.URL.Query().Has("recursive")
	entries, err := s.repo.lsTree(tree, recursive)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	lim := treeLimit{math.MaxInt, math.MaxInt} // one level is never cut
	if recursive {
		lim = s.treeLimits()
	}
	array, truncated := s.treeArray(entries, lim)
	sha, _ := json.Marshal(tree)
	url, _ := json.Marshal(s.api("git/trees/%s", tree))
	// the keys in the order encoding/json gives a map's
	writeJSONRaw(w, http.StatusOK, fmt.Sprintf(`{"sha":%s,"tree":%s,"truncated":%t,"url":%s}`, sha, array, truncated, url))
}

// treeLimit is what one recursive tree listing may hold.
type treeLimit struct{ entries, bytes int }

func (s *Server) treeLimits() treeLimit {
	return treeLimit{limit(s.TruncateTreesOver, MaxTreeEntries), limit(s.TruncateTreesOverBytes, MaxTreeBytes)}
}

// limit is a Truncate setting in force: its own when positive, GitHub's
// when zero, none when negative.
func limit(set, github int) int {
	switch {
	case set > 0:
		return set
	case set < 0:
		return math.MaxInt
	}
	return github
}

// treeArray is the JSON tree array of the entries that fit lim, each
// encoded once, and whether any did not fit.
func (s *Server) treeArray(entries []treeEntry, lim treeLimit) ([]byte, bool) {
	out := []byte{'['}
	for i, e := range entries {
		j := treeEntryJSON{Path: e.Path, Mode: e.Mode, Type: e.Type, SHA: e.SHA}
		switch e.Type {
		case "blob":
			size := e.Size
			j.Size = &size
			j.URL = s.api("git/blobs/%s", e.SHA)
		case "tree":
			j.URL = s.api("git/trees/%s", e.SHA)
		}
		b, err := json.Marshal(j)
		if err != nil {
			panic(err) // strings and a number only
		}
		comma := min(i, 1)
		if i == lim.entries || len(out)+comma+len(b)+1 > lim.bytes { // and the closing bracket
			return append(out, ']'), true
		}
		if comma > 0 {
			out = append(out, ',')
		}
		out = append(out, b...)
	}
	return append(out, ']'), false
}

// compareFileJSON is one file of GitHub's compare as GitHub sends it: sha
// is null for a change of mode only (the content is the same), blob_url and
// raw_url are null for a submodule (a gitlink has no blob to show).
type compareFileJSON struct {
	SHA              *string `json:"sha"`
	Filename         string  `json:"filename"`
	Status           string  `json:"status"`
	Additions        int     `json:"additions"`
	Deletions        int     `json:"deletions"`
	Changes          int     `json:"changes"`
	BlobURL          *string `json:"blob_url"`
	RawURL           *string `json:"raw_url"`
	ContentsURL      string  `json:"contents_url"`
	PreviousFilename string  `json:"previous_filename,omitempty"`
}

func (s *Server) serveCompare(w http.ResponseWriter, r *http.Request, basehead string) {
	baseRef, headRef, ok := strings.Cut(basehead, "...")
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	base, ok1 := s.repo.resolve(baseRef, "commit")
	head, ok2 := s.repo.resolve(headRef, "commit")
	if !ok1 || !ok2 {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	mbOut, err := s.repo.read("merge-base", base, head)
	if err != nil {
		writeError(w, http.StatusNotFound, "No common ancestor between "+baseRef+" and "+headRef+".")
		return
	}
	mergeBase := strings.TrimSpace(string(mbOut))
	ahead, behind, err := s.aheadBehind(base, head)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "rev-list failed")
		return
	}
	commits, err := s.commitPage(r, base, head)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	files, err := s.diffFiles(mergeBase, head)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	baseCommit, err1 := s.commit(base)
	mbCommit, err2 := s.commit(mergeBase)
	if err1 != nil || err2 != nil {
		writeError(w, http.StatusInternalServerError, "git log failed")
		return
	}
	answer := map[string]any{
		"url":               s.api("compare/%s...%s", baseRef, headRef),
		"status":            compareStatus(ahead, behind),
		"ahead_by":          ahead,
		"behind_by":         behind,
		"total_commits":     ahead,
		"base_commit":       baseCommit,
		"merge_base_commit": mbCommit,
		"commits":           commits,
		"files":             files,
	}
	if s.CompareWithoutFiles {
		delete(answer, "files")
	}
	writeJSON(w, answer)
}

// aheadBehind counts the commits head has that base lacks, and the reverse.
func (s *Server) aheadBehind(base, head string) (ahead, behind int, err error) {
	count := func(rng string) (int, error) {
		out, err := s.repo.read("rev-list", "--count", rng, "--")
		if err != nil {
			return 0, err
		}
		return strconv.Atoi(strings.TrimSpace(string(out)))
	}
	ahead, err1 := count(base + ".." + head)
	behind, err2 := count(head + ".." + base)
	return ahead, behind, errors.Join(err1, err2)
}

// compareStatus is GitHub's name for how head relates to base.
func compareStatus(ahead, behind int) string {
	switch {
	case ahead == 0 && behind == 0:
		return "identical"
	case behind == 0:
		return "ahead"
	case ahead == 0:
		return "behind"
	}
	return "diverged"
}

// commitPage lists the commits from base to head, oldest first, paged by the
// request's page and per_page (default 250, GitHub's most).
func (s *Server) commitPage(r *http.Request, base, head string) ([]commitJSON, error) {
	page, perPage := 1, 250
	if v, err := strconv.Atoi(r.URL.Query().Get("page")); err == nil && v > 0 {
		page = v
	}
	if v, err := strconv.Atoi(r.URL.Query().Get("per_page")); err == nil && v > 0 {
		perPage = min(v, 250)
	}
	commits, err := s.commits("--reverse", "--topo-order", base+".."+head, "--")
	if err != nil {
		return nil, err
	}
	from := min((page-1)*perPage, len(commits))
	commits = commits[from:min(from+perPage, len(commits))]
	if commits == nil {
		commits = []commitJSON{}
	}
	return commits, nil
}

// diffFiles lists what changed from base to head as GitHub's compare files,
// with rename detection, at most MaxCompareFiles.
func (s *Server) diffFiles(base, head string) ([]compareFileJSON, error) {
	files, err := s.allDiffFiles(base, head)
	return files[:min(len(files), MaxCompareFiles)], err
}

// allDiffFiles lists every file that changed from base to head, as GitHub
// shows them, with rename detection.
func (s *Server) allDiffFiles(base, head string) ([]compareFileJSON, error) {
	out, err := s.repo.read("diff", "--raw", "--numstat", "-z", "-M", "--no-abbrev", "--no-ext-diff", base, head, "--")
	if err != nil {
		return nil, err
	}
	toks := strings.Split(string(out), "\x00")
	files := []compareFileJSON{}
	i := 0
	for ; i < len(toks) && strings.HasPrefix(toks[i], ":"); i++ {
		f := strings.Fields(strings.TrimPrefix(toks[i], ":"))
		if len(f) != 5 || i+1 >= len(toks) {
			return nil, fmt.Errorf("git diff: bad record %q", toks[i])
		}
		i++
		cf, renamed := s.compareFile(head, f, toks[i])
		if renamed {
			if i+1 >= len(toks) {
				return nil, fmt.Errorf("git diff: bad record %q", toks[i-1])
			}
			i++
			cf.Filename, cf.PreviousFilename = toks[i], toks[i-1]
		}
		files = append(files, cf)
	}
	if err := countLines(files, toks[i:]); err != nil {
		return nil, err
	}
	return files, nil
}

// compareFile is one raw diff record (modes, shas, status letter) of path as
// GitHub's compare shows it; renamed says the record names a second path.
func (s *Server) compareFile(head string, raw []string, path string) (cf compareFileJSON, renamed bool) {
	oldMode, newMode, oldSHA, newSHA, letter := raw[0], raw[1], raw[2], raw[3], raw[4][:1]
	cf = compareFileJSON{SHA: &newSHA, Filename: path}
	mode := newMode
	switch letter {
	case "A":
		cf.Status = "added"
	case "M":
		cf.Status = "modified"
		if oldSHA == newSHA {
			cf.SHA = nil // a change of mode only
		}
	case "D":
		cf.Status, cf.SHA, mode = "removed", &oldSHA, oldMode
	case "R", "C":
		cf.Status = map[string]string{"R": "renamed", "C": "copied"}[letter]
		renamed = true
	default: // T, a change of type (file, symlink, submodule)
		cf.Status = "changed"
	}
	if mode != "160000" {
		blob, rawURL := s.web("blob", head, path), s.web("raw", head, path)
		cf.BlobURL, cf.RawURL = &blob, &rawURL
	}
	cf.ContentsURL = s.api("contents/%s?ref=%s", path, head)
	return cf, renamed
}

// countLines sets the line counts of files from git's --numstat -z records,
// which follow the raw records in the same order ("-" for a binary file).
func countLines(files []compareFileJSON, toks []string) error {
	k := 0
	for i := 0; i < len(toks) && k < len(files); i++ {
		if toks[i] == "" {
			continue
		}
		f := strings.SplitN(toks[i], "\t", 3)
		if len(f) != 3 {
			return fmt.Errorf("git diff: bad numstat record %q", toks[i])
		}
		if f[2] == "" { // a rename: the two paths follow
			i += 2
		}
		add, _ := strconv.Atoi(f[0])
		del, _ := strconv.Atoi(f[1])
		files[k].Additions, files[k].Deletions, files[k].Changes = add, del, add+del
		k++
	}
	return nil
}
