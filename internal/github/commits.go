package github

import (
	"context"
	"fmt"

	gh "github.com/google/go-github/v66/github"

	"github.com/knue/syncjob/internal/policy"
)

// maxCommitFiles is how many files GitHub lists for one commit at most; a
// list that long may be cut.
const maxCommitFiles = 3000

// CommitPaths returns every path the commit changes from its first parent
// (both paths of a rename), reading its pages of files. Errors:
// policy.ErrCompareUntrusted when GitHub may have cut the list (3,000
// files or more), policy.ErrNotFound, policy.ErrRateLimited,
// policy.ErrConfig.
func (s *Source) CommitPaths(ctx context.Context, sha string) ([]string, error) {
	op := "get commit " + sha
	var paths []string
	n := 0
	opts := &gh.ListOptions{PerPage: 300}
	for {
		var c *gh.RepositoryCommit
		var resp *gh.Response
		err := s.do(ctx, op, func(ctx context.Context) (*gh.Response, error) {
			var err error
			c, resp, err = s.client.Repositories.GetCommit(ctx, s.owner, s.repo, sha, opts)
			return resp, err
		})
		if err != nil {
			return nil, s.translate(op, err)
		}
		for _, f := range c.Files {
			n++
			paths = append(paths, f.GetFilename())
			if prev := f.GetPreviousFilename(); prev != "" {
				paths = append(paths, prev)
			}
		}
		if resp.NextPage == 0 || len(c.Files) == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	if n >= maxCommitFiles {
		return nil, s.masked(fmt.Errorf("github: %s: %w: %d files listed, GitHub lists at most %d", op, policy.ErrCompareUntrusted, n, maxCommitFiles))
	}
	return paths, nil
}
