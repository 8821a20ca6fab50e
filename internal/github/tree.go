package github

import (
	"context"
	"fmt"
	"sort"
	"sync"

	gh "github.com/google/go-github/v66/github"

	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
)

// Tree returns every regular file (mode 100644 or 100755; not symlinks, not
// submodules) of the commit's tree, sorted by path bytes. A truncated
// recursive listing is not trusted: the tree is then walked folder by folder.
// The Source keeps what the listing says the commit's archive holds, the
// bound on what its archive may inflate to (see archiveBudget).
// Errors: policy.ErrNotFound (unknown commit), policy.ErrRateLimited, policy.ErrConfig.
func (s *Source) Tree(ctx context.Context, commit string) ([]policy.File, error) {
	root, err := s.getTree(ctx, commit, true)
	if err != nil {
		return nil, err
	}
	l := &listing{archive: archiveOverhead}
	if !root.GetTruncated() {
		l.add("", root.Entries)
	} else {
		s.log.InfoContext(ctx, "tree truncated, walking folders", logkey.Commit, commit, logkey.Entries, len(root.Entries))
		if err = s.walk(ctx, commit, "", l); err != nil {
			return nil, err
		}
	}
	sort.Slice(l.files, func(i, j int) bool { return l.files[i].Path < l.files[j].Path })
	s.listed.remember(commit, l.archive)
	return l.files, nil
}

// walk lists the tree sha one level deep and each sub-tree recursively,
// walking further into any sub-tree whose listing is truncated too.
func (s *Source) walk(ctx context.Context, sha, prefix string, l *listing) error {
	level, err := s.getTree(ctx, sha, false)
	if err != nil {
		return err
	}
	if level.GetTruncated() {
		return s.masked(fmt.Errorf("github: get tree %s: one folder level is truncated", sha))
	}
	l.add(prefix, level.Entries)
	for _, e := range level.Entries {
		if e.GetType() != "tree" {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		sub, err := s.getTree(ctx, e.GetSHA(), true)
		if err != nil {
			return err
		}
		subPrefix := prefix + e.GetPath() + "/"
		if !sub.GetTruncated() {
			l.add(subPrefix, sub.Entries)
			continue
		}
		if err = s.walk(ctx, e.GetSHA(), subPrefix, l); err != nil {
			return err
		}
	}
	return nil
}

// listing is what a tree's listings gave: its regular files, and how many
// bytes its archive holds at most.
type listing struct {
	files   []policy.File
	archive int64
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

// add takes the entries of one listing under prefix: every entry counts
// toward the archive (a blob of any mode with its size), regular files
// are kept.
func (l *listing) add(prefix string, entries []*gh.TreeEntry) {
	for _, e := range entries {
		l.archive += archiveEntryOverhead + int64(len(prefix)+len(e.GetPath()))
		if e.GetType() != "blob" {
			continue
		}
		size := int64(-1)
		if e.Size != nil {
			size = int64(*e.Size)
			l.archive += max(size, 0)
		}
		if e.GetMode() != "100644" && e.GetMode() != "100755" {
			continue
		}
		l.files = append(l.files, policy.File{Path: prefix + e.GetPath(), SHA: e.GetSHA(), Size: size})
	}
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
