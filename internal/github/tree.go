package github

import (
	"context"
	"fmt"
	"sort"

	gh "github.com/google/go-github/v66/github"

	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
)

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
		s.log.InfoContext(ctx, "tree truncated, walking folders", logkey.Commit, commit, logkey.Entries, len(root.Entries))
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
		return nil, s.masked(fmt.Errorf("github: get tree %s: one folder level is truncated", sha))
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
