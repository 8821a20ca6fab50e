package github

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"

	gh "github.com/google/go-github/v66/github"
	"golang.org/x/sync/errgroup"

	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/strs"
)

// Tree returns every regular file (mode 100644 or 100755; not symlinks, not
// submodules) of the commit's tree, sorted by path bytes. A truncated
// recursive listing is not trusted: the tree is then walked folder by folder.
// The Source keeps what the listing says the commit's archive holds, the
// bound on what its archive may inflate to (see archiveBudget).
// The answers are decoded entry by entry (treejson.go): what a listing
// holds is its files, not the document nor an entry per folder.
// Errors: policy.ErrNotFound (unknown commit), policy.ErrRateLimited, policy.ErrConfig.
func (s *Source) Tree(ctx context.Context, commit string) ([]policy.File, error) {
	files, _, err := s.TreeKeeping(ctx, commit, nil)
	return files, err
}

// TreeKeeping is Tree keeping only the files keep takes (all when keep is
// nil): the others are decoded and let go, never held (a first sync in
// windows, internal/syncer). keep may be called from several goroutines at
// once, and again for a path whose listing a retry started over. policies
// is how many policy files (policy.IsPolicyPath) the tree has, kept or not.
func (s *Source) TreeKeeping(ctx context.Context, commit string, keep func(path string) bool) (files []policy.File, policies int, err error) {
	root, err := s.listTree(ctx, commit, true, "", keep, s.ahead.armer(commit, s.threshold))
	if err != nil {
		return nil, 0, err
	}
	l := &root.listing
	if root.truncated {
		s.log.InfoContext(ctx, "tree truncated, walking folders", logkey.Commit, commit, logkey.Entries, root.entries)
		l = &listing{archive: archiveOverhead}
		w := walker{s: s, sem: make(chan struct{}, walkAtOnce), keep: keep}
		if err = w.walk(ctx, commit, "", root.last, l); err != nil {
			return nil, 0, err
		}
	} else {
		l.archive += archiveOverhead
	}
	sort.Slice(l.files, func(i, j int) bool { return l.files[i].Path < l.files[j].Path })
	s.listed.remember(commit, l.archive)
	return l.files, l.policies, nil
}

// walker walks a tree whose recursive listing GitHub cut: at 100,000
// entries or 7 MB (githubtest.MaxTreeEntries, MaxTreeBytes), some 25,000
// policies with long Korean paths (docs/bench.md, "Trees cut as GitHub
// cuts them"). It lists a folder's sub-folders at once, with at most
// walkAtOnce requests in flight for the whole walk, however deep.
type walker struct {
	s    *Source
	sem  chan struct{}          // a slot is held for one request, never while sub-walks go on
	keep func(path string) bool // the files to keep (TreeKeeping); nil: all
}

// walkAtOnce is how many listings a walk has in flight at most: a few,
// as GitHub asks clients to keep concurrent requests few (its secondary
// limit is 100).
const walkAtOnce = 8

// walk lists the tree sha, whose recursive listing was cut after the
// entry at path last (relative to it), one level deep, then each
// sub-folder recursively, walking further into any sub-folder whose
// listing is cut too. A sole sub-folder in which the cut listing ended is
// walked at once: its own listing would be cut too (a repository of one
// top folder).
func (w walker) walk(ctx context.Context, sha, prefix, last string, l *listing) error {
	level, err := w.list(ctx, sha, false, prefix)
	if err != nil {
		return err
	}
	if level.truncated {
		return w.s.masked(fmt.Errorf("github: get tree %s: one folder level is truncated", sha))
	}
	l.merge(level.listing)
	if len(level.trees) == 1 {
		if sub := level.trees[0].Path + "/"; strings.HasPrefix(last, sub) {
			return w.walk(ctx, level.trees[0].SHA, prefix+sub, strings.TrimPrefix(last, sub), l)
		}
	}
	subs := make([]listing, len(level.trees))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(walkAtOnce) // goroutines; the requests are bounded by w.sem
	for i, sub := range level.trees {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			subPrefix := prefix + sub.Path + "/"
			got, err := w.list(gctx, sub.SHA, true, subPrefix)
			if err != nil || !got.truncated {
				subs[i] = got.listing
				return err
			}
			return w.walk(gctx, sub.SHA, subPrefix, got.last, &subs[i])
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	l.mergeAll(subs)
	return nil
}

// list is listTree holding one of the walk's slots for the request only.
func (w walker) list(ctx context.Context, sha string, recursive bool, prefix string) (treeListing, error) {
	select {
	case w.sem <- struct{}{}:
	case <-ctx.Done():
		return treeListing{}, ctx.Err()
	}
	defer func() { <-w.sem }()
	return w.s.listTree(ctx, sha, recursive, prefix, w.keep, nil)
}

// listing is what a tree's listings gave: its regular files (those keep
// takes), how many policy files it listed, kept or not, and how many bytes
// its archive holds at most.
type listing struct {
	files    []policy.File
	policies int
	archive  int64
	strs     strs.Chunks // the files' paths and shas
}

// Bounds of what git archive adds to a tree's bytes: per entry its header
// block, a pax header for a long or non-ASCII name (a block and the name's
// record), the top folder's prefix and the padding to a whole block; per
// archive the pax global header holding the commit id, the top folder and
// the end-of-archive blocks padded to a whole record.
const (
	archiveEntryOverhead = 5 * 512
	archiveOverhead      = 64 << 10
)

// add takes one entry of a listing under prefix: every entry counts toward
// the archive (a blob of any mode with its size), regular files are kept
// when keep (nil: all) takes them. It says whether the entry is a policy
// file, kept or not.
func (l *listing) add(prefix string, e treeEntry, keep func(string) bool) (isPolicy bool) {
	l.archive += archiveEntryOverhead + int64(len(prefix)+len(e.Path))
	if e.Type != "blob" {
		return false
	}
	l.archive += max(e.Size, 0)
	if e.Mode != "100644" && e.Mode != "100755" {
		return false
	}
	var path string
	if keep == nil {
		path = l.strs.Join(prefix, e.Path)
	} else {
		path = prefix + e.Path // let go at once unless kept, then copied into the chunks
	}
	if isPolicy = policy.IsPolicyPath(path); isPolicy {
		l.policies++
	}
	switch {
	case keep == nil:
	case keep(path):
		path = l.strs.Copy(path)
	default:
		return isPolicy
	}
	l.files = append(l.files, policy.File{Path: path, SHA: l.strs.Join(e.SHA, ""), Size: e.Size})
	return isPolicy
}

// merge takes the files and bytes of another listing.
func (l *listing) merge(o listing) {
	l.files = append(l.files, o.files...)
	l.policies += o.policies
	l.archive += o.archive
}

// mergeAll takes the files and bytes of others, the files grown once, each
// listing let go as it is taken.
func (l *listing) mergeAll(others []listing) {
	n := len(l.files)
	for _, o := range others {
		n += len(o.files)
	}
	l.files = slices.Grow(l.files, n-len(l.files))
	for i := range others {
		l.merge(others[i])
		others[i] = listing{}
	}
}

// treeListing is one answer of the trees API as the listing keeps it: its
// files under the prefix asked for, its sub-trees (one level only), how
// many entries it had and whether GitHub truncated it.
type treeListing struct {
	listing
	trees     []treeEntry // sub-trees: Path and SHA
	entries   int
	truncated bool
	last      string // the path of the last entry, relative to the tree listed
}

// treeSizes remembers what the last tree listed says its commit's archive
// holds at most. Trees of a commit never change.
type treeSizes struct {
	mu      sync.Mutex
	commit  string
	archive int64
}

func (t *treeSizes) remember(commit string, archive int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.commit, t.archive = commit, archive
}

// archiveOf returns the bound of commit's archive, if its tree was listed.
func (t *treeSizes) archiveOf(commit string) (int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.archive, t.commit == commit && commit != ""
}

// listTree lists the tree sha (recursively, or one level) with the files
// under prefix that keep takes (nil: all). A retried request starts the
// listing over. seen, when not nil, hears how many policy files the
// listing has shown so far, kept or not, as they stream by
// (PrefetchArchive's armer).
func (s *Source) listTree(ctx context.Context, sha string, recursive bool, prefix string, keep func(string) bool, seen func(n int)) (treeListing, error) {
	op := "get tree " + sha
	var got treeListing
	err := s.do(ctx, op, func(ctx context.Context) (*gh.Response, error) {
		got = treeListing{}
		policies := 0
		return s.readTree(ctx, sha, recursive, func(e treeEntry) {
			got.entries++
			got.last = e.Path
			if got.add(prefix, e, keep) && seen != nil {
				policies++
				seen(policies)
			}
			if !recursive && e.Type == "tree" {
				got.trees = append(got.trees, treeEntry{Path: e.Path, SHA: e.SHA})
			}
		}, &got.truncated)
	})
	if err != nil {
		return treeListing{}, s.translate(op, err)
	}
	return got, nil
}

// readTree makes one trees request and decodes its answer as it arrives.
func (s *Source) readTree(ctx context.Context, sha string, recursive bool, each func(treeEntry), truncated *bool) (*gh.Response, error) {
	u := fmt.Sprintf("repos/%s/%s/git/trees/%s", s.owner, s.repo, url.PathEscape(sha))
	if recursive {
		u += "?recursive=1"
	}
	req, err := s.client.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.BareDo(ctx, req)
	if err != nil {
		return resp, err
	}
	defer resp.Body.Close()
	*truncated, err = decodeTree(resp.Body, each)
	if err != nil {
		return resp, fmt.Errorf("decode tree: %w", err)
	}
	return resp, nil
}
