package github

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	gh "github.com/google/go-github/v66/github"

	"github.com/knue/syncjob/internal/policy"
)

// Defaults of Config.
const (
	DefaultBaseURL          = "https://api.github.com/"
	DefaultBranch           = "main"
	DefaultArchiveThreshold = 10
	DefaultTimeout          = 60 * time.Second
)

// Log keys.
const (
	keyOp      = "op"
	keyAttempt = "attempt"
	keyWait    = "wait"
	keyError   = "error"
	keyCommit  = "commit"
	keyFiles   = "files"
)

// Config says which repository and branch to read and how.
type Config struct {
	Owner, Repo string
	Branch      string // default "main"
	Token       string // optional; sent only to the API host
	BaseURL     string // default https://api.github.com/
	// HTTPClient is optional; its Transport, Timeout (default 60s per request
	// when the client is nil) and Jar are used.
	HTTPClient *http.Client
	// Sleep waits between retries; default a timer that honours ctx.
	Sleep func(ctx context.Context, d time.Duration) error
	// Backoff is the wait before each retry: len(Backoff) retries after the
	// first attempt. nil means 1s, 2s, 4s; an empty non-nil slice disables retries.
	Backoff []time.Duration
	// ArchiveThreshold: Contents reads one tarball when more files than this
	// are wanted, else one blob request per file. 0 means 10; negative means
	// always the tarball.
	ArchiveThreshold int
	// Progress, if set, is called after each file Contents reads.
	Progress func(done, total int)
	Logger   *slog.Logger
	// Now is the clock used to turn Retry-After into a time; default time.Now.
	Now func() time.Time
}

// Source reads one branch of one repository. It is safe for concurrent use.
type Source struct {
	owner, repo, branch string
	token               string
	client              *gh.Client
	http                *http.Client // counting, token only to the API host
	timeout             time.Duration
	sleep               func(ctx context.Context, d time.Duration) error
	backoff             []time.Duration
	threshold           int
	progress            func(done, total int)
	log                 *slog.Logger
	now                 func() time.Time
	requests            atomic.Int64
}

// New checks cfg and builds a Source. A bad field is an error wrapping
// policy.ErrConfig that names it.
func New(cfg Config) (*Source, error) {
	if cfg.Owner == "" || strings.ContainsAny(cfg.Owner, "/ ") {
		return nil, fmt.Errorf("github: config Owner %q: %w", cfg.Owner, policy.ErrConfig)
	}
	if cfg.Repo == "" || strings.ContainsAny(cfg.Repo, "/ ") {
		return nil, fmt.Errorf("github: config Repo %q: %w", cfg.Repo, policy.ErrConfig)
	}
	if cfg.Branch == "" {
		cfg.Branch = DefaultBranch
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if !strings.HasSuffix(cfg.BaseURL, "/") {
		cfg.BaseURL += "/"
	}
	base, err := url.Parse(cfg.BaseURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("github: config BaseURL %q is not an http(s) URL: %w", cfg.BaseURL, policy.ErrConfig)
	}
	s := &Source{
		owner:     cfg.Owner,
		repo:      cfg.Repo,
		branch:    cfg.Branch,
		token:     cfg.Token,
		sleep:     cfg.Sleep,
		backoff:   cfg.Backoff,
		threshold: cfg.ArchiveThreshold,
		progress:  cfg.Progress,
		log:       cfg.Logger,
		now:       cfg.Now,
	}
	if s.sleep == nil {
		s.sleep = sleepCtx
	}
	if s.backoff == nil {
		s.backoff = []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second}
	}
	if s.threshold == 0 {
		s.threshold = DefaultArchiveThreshold
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.log = s.log.With("component", "github")
	if s.now == nil {
		s.now = time.Now
	}

	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	s.timeout = hc.Timeout
	s.http = &http.Client{
		Transport: &authTransport{
			next:  &countingTransport{next: next, n: &s.requests},
			token: cfg.Token,
			host:  base.Host,
		},
		Timeout: hc.Timeout,
		Jar:     hc.Jar,
	}
	s.client = gh.NewClient(s.http)
	s.client.BaseURL = base
	s.client.UploadURL = base
	return s, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Requests returns the number of HTTP requests sent to GitHub so far,
// retries and archive downloads included.
func (s *Source) Requests() int64 { return s.requests.Load() }

// Head returns the commit sha at the branch head with exactly one request
// (more only when a transient failure is retried). Errors: policy.ErrConfig
// (unknown repository or branch, bad credentials), policy.ErrRateLimited.
func (s *Source) Head(ctx context.Context) (string, error) {
	op := "get head of " + s.owner + "/" + s.repo + " branch " + s.branch
	var sha string
	err := s.do(ctx, op, func(ctx context.Context) (*gh.Response, error) {
		v, resp, err := s.client.Repositories.GetCommitSHA1(ctx, s.owner, s.repo, s.branch, "")
		sha = v
		return resp, err
	})
	if err != nil {
		switch statusOf(err) {
		case http.StatusNotFound, http.StatusUnprocessableEntity:
			if rateLimitOf(err, s.now()) == nil {
				return "", s.redact(fmt.Errorf("github: %s: repository or branch not found (or not visible to this token): %w", op, policy.ErrConfig))
			}
		case http.StatusConflict:
			return "", s.redact(fmt.Errorf("github: %s: repository is empty: %w", op, policy.ErrConfig))
		}
		return "", s.translate(op, err)
	}
	sha = strings.TrimSpace(sha)
	if !isSHA(sha) {
		return "", s.redact(fmt.Errorf("github: %s: answer %.60q is not a commit sha", op, sha))
	}
	return sha, nil
}

func isSHA(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Tree returns every regular file (mode 100644 or 100755; not symlinks, not
// submodules) of the commit's tree, sorted by path bytes. A truncated
// recursive listing is not trusted: the tree is then walked folder by folder.
// Errors: policy.ErrNotFound (unknown commit), policy.ErrRateLimited, policy.ErrConfig.
func (s *Source) Tree(ctx context.Context, commit string) ([]policy.File, error) {
	root, err := s.getTree(ctx, commit, true)
	if err != nil {
		return nil, err
	}
	var files []policy.File
	if !root.GetTruncated() {
		files = appendBlobs(files, "", root.Entries)
	} else {
		s.log.InfoContext(ctx, "tree truncated, walking folders", keyCommit, commit, "entries", len(root.Entries))
		if files, err = s.walk(ctx, commit, "", files); err != nil {
			return nil, err
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// walk lists the tree sha one level deep and each sub-tree recursively,
// walking further into any sub-tree whose listing is truncated too.
func (s *Source) walk(ctx context.Context, sha, prefix string, files []policy.File) ([]policy.File, error) {
	level, err := s.getTree(ctx, sha, false)
	if err != nil {
		return nil, err
	}
	if level.GetTruncated() {
		return nil, s.redact(fmt.Errorf("github: get tree %s: one folder level is truncated", sha))
	}
	files = appendBlobs(files, prefix, level.Entries)
	for _, e := range level.Entries {
		if e.GetType() != "tree" {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sub, err := s.getTree(ctx, e.GetSHA(), true)
		if err != nil {
			return nil, err
		}
		subPrefix := prefix + e.GetPath() + "/"
		if !sub.GetTruncated() {
			files = appendBlobs(files, subPrefix, sub.Entries)
			continue
		}
		if files, err = s.walk(ctx, e.GetSHA(), subPrefix, files); err != nil {
			return nil, err
		}
	}
	return files, nil
}

func appendBlobs(files []policy.File, prefix string, entries []*gh.TreeEntry) []policy.File {
	for _, e := range entries {
		if e.GetType() != "blob" || (e.GetMode() != "100644" && e.GetMode() != "100755") {
			continue
		}
		size := int64(-1)
		if e.Size != nil {
			size = int64(*e.Size)
		}
		files = append(files, policy.File{Path: prefix + e.GetPath(), SHA: e.GetSHA(), Size: size})
	}
	return files
}

func (s *Source) getTree(ctx context.Context, sha string, recursive bool) (*gh.Tree, error) {
	op := "get tree " + sha
	var tree *gh.Tree
	err := s.do(ctx, op, func(ctx context.Context) (*gh.Response, error) {
		t, resp, err := s.client.Git.GetTree(ctx, s.owner, s.repo, sha, recursive)
		tree = t
		return resp, err
	})
	if err != nil {
		return nil, s.translate(op, err)
	}
	return tree, nil
}

// Compare returns the changes from base to head. Errors: policy.ErrCompareUntrusted
// when the compare cannot drive an incremental run (base or head unknown: 404
// or 422; status diverged or behind, i.e. a force-push; 300 files or more,
// GitHub's cap), policy.ErrRateLimited, policy.ErrConfig. Identical commits
// give an empty changeset.
func (s *Source) Compare(ctx context.Context, base, head string) (policy.Changeset, error) {
	rng := base + "..." + head
	op := "compare " + rng
	var comp *gh.CommitsComparison
	err := s.do(ctx, op, func(ctx context.Context) (*gh.Response, error) {
		c, resp, err := s.client.Repositories.CompareCommits(ctx, s.owner, s.repo, base, head, nil)
		comp = c
		return resp, err
	})
	untrusted := func(reason string) error {
		return s.redact(fmt.Errorf("github: %s: %w: %s", op, policy.ErrCompareUntrusted, reason))
	}
	if err != nil {
		if rateLimitOf(err, s.now()) == nil {
			switch st := statusOf(err); st {
			case http.StatusNotFound, http.StatusUnprocessableEntity:
				return policy.Changeset{}, untrusted(fmt.Sprintf("base or head unknown (%d %s)", st, http.StatusText(st)))
			}
		}
		return policy.Changeset{}, s.translate(op, err)
	}
	cs := policy.Changeset{Base: base, Head: head}
	switch st := comp.GetStatus(); st {
	case "identical":
		return cs, nil
	case "ahead":
	case "diverged", "behind":
		return policy.Changeset{}, untrusted("head is " + st + " base (history rewritten)")
	default:
		return policy.Changeset{}, untrusted(fmt.Sprintf("unknown status %q", st))
	}
	if n := len(comp.Files); n >= maxCompareFiles {
		return policy.Changeset{}, untrusted(fmt.Sprintf("%d files listed, GitHub lists at most %d", n, maxCompareFiles))
	}
	for _, f := range comp.Files {
		c := policy.Change{Status: policy.ChangeStatus(f.GetStatus()), Path: f.GetFilename(), SHA: f.GetSHA()}
		switch c.Status {
		case policy.Removed:
			c.SHA = ""
		case policy.Renamed, policy.Copied:
			c.PreviousPath = f.GetPreviousFilename()
		}
		if c.Path == "" {
			return policy.Changeset{}, untrusted("a file without a name")
		}
		cs.Changes = append(cs.Changes, c)
	}
	return cs, nil
}

// maxCompareFiles is how many files GitHub's compare lists at most; a list
// that long may be cut.
const maxCompareFiles = 300

// fatal says whether an error must stop a whole run rather than one file.
func fatal(ctx context.Context, err error) bool {
	return errors.Is(err, policy.ErrRateLimited) || errors.Is(err, policy.ErrConfig) || ctx.Err() != nil
}
