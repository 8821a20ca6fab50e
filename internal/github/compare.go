package github

import (
	"context"
	"fmt"
	"net/http"

	gh "github.com/google/go-github/v66/github"

	"github.com/knue/syncjob/internal/policy"
)

// maxCompareFiles is how many files GitHub's compare lists at most; a list
// that long may be cut.
const maxCompareFiles = 300

// Compare returns the changes from base to head. Errors: policy.ErrCompareUntrusted
// when the compare cannot drive an incremental run (base or head unknown: 404
// or 422; status diverged, i.e. a force-push; status behind, also wrapping
// policy.ErrHeadBehind; 300 files or more, GitHub's cap), policy.ErrRateLimited, policy.ErrConfig. Identical commits
// give an empty changeset.
func (s *Source) Compare(ctx context.Context, base, head string) (policy.Changeset, error) {
	op := "compare " + base + "..." + head
	comp, unknown, err := s.compare(ctx, op, base, head, nil)
	untrusted := func(reason string) error {
		return s.masked(fmt.Errorf("github: %s: %w: %s", op, policy.ErrCompareUntrusted, reason))
	}
	switch {
	case unknown != 0:
		return policy.Changeset{}, untrusted(fmt.Sprintf("base or head unknown (%d %s)", unknown, http.StatusText(unknown)))
	case err != nil:
		return policy.Changeset{}, err
	}
	cs := policy.Changeset{Base: base, Head: head, TotalCommits: comp.GetTotalCommits()}
	for _, c := range comp.Commits {
		cs.Commits = append(cs.Commits, c.GetSHA())
	}
	switch st := comp.GetStatus(); st {
	case "identical":
		return cs, nil
	case "ahead":
	case "behind":
		return policy.Changeset{}, s.masked(fmt.Errorf("github: %s: %w: %w", op, policy.ErrCompareUntrusted, policy.ErrHeadBehind))
	case "diverged":
		return policy.Changeset{}, untrusted("head is diverged from base (history rewritten)")
	default:
		return policy.Changeset{}, untrusted(fmt.Sprintf("unknown status %q", st))
	}
	if comp.Files == nil {
		// GitHub leaves the files out when it cannot list them; head being
		// ahead says something changed.
		return policy.Changeset{}, untrusted(fmt.Sprintf("no files listed for %d commits ahead", comp.GetAheadBy()))
	}
	if n := len(comp.Files); n >= maxCompareFiles {
		return policy.Changeset{}, untrusted(fmt.Sprintf("%d files listed, GitHub lists at most %d", n, maxCompareFiles))
	}
	var unsure []int
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
		if policy.IsPolicyPath(c.Path) && !plainBlob(f) {
			unsure = append(unsure, len(cs.Changes))
		}
		cs.Changes = append(cs.Changes, c)
	}
	if len(unsure) > 0 {
		return s.fromHeadTree(ctx, cs, unsure)
	}
	return cs, nil
}

// plainBlob reports whether a compare entry names the blob of a file at
// head: not a removal, with a sha (GitHub sends null for a change of mode
// only), not a change of type (a file that became a symlink or a
// submodule, or the reverse: "changed"), not a submodule (no blob_url nor
// raw_url).
func plainBlob(f *gh.CommitFile) bool {
	switch f.GetStatus() {
	case string(policy.Removed):
		return true // needs no sha
	case string(policy.Changed):
		return false
	}
	return f.SHA != nil && (f.BlobURL != nil || f.RawURL != nil)
}

// fromHeadTree settles the changes at the indexes unsure from the head
// tree (one listing): a regular file there takes its sha from it; a path
// that is not one (a symlink, a submodule) is no longer a policy, so its
// change is a removal (and a rename's previous path, removed too).
func (s *Source) fromHeadTree(ctx context.Context, cs policy.Changeset, unsure []int) (policy.Changeset, error) {
	tree, err := s.Tree(ctx, cs.Head)
	if err != nil {
		return policy.Changeset{}, err
	}
	shas := make(map[string]string, len(tree))
	for _, f := range tree {
		shas[f.Path] = f.SHA
	}
	for _, i := range unsure {
		c := &cs.Changes[i]
		if sha, ok := shas[c.Path]; ok {
			c.SHA = sha
			if c.Status == policy.Changed {
				c.Status = policy.Modified
			}
			continue
		}
		if c.Status == policy.Renamed {
			cs.Changes = append(cs.Changes, policy.Change{Status: policy.Removed, Path: c.PreviousPath})
		}
		*c = policy.Change{Status: policy.Removed, Path: c.Path}
	}
	return cs, nil
}

// Relation says how head stands to base, by GitHub's compare status:
// "identical", "ahead" (head contains base), "behind" (base contains
// head), "diverged", or "unknown" when GitHub does not know one of them
// (404 or 422). One request, of one commit's page: the files are not read.
func (s *Source) Relation(ctx context.Context, base, head string) (string, error) {
	op := "compare " + base + "..." + head
	comp, unknown, err := s.compare(ctx, op, base, head, &gh.ListOptions{PerPage: 1})
	switch {
	case unknown != 0:
		return "unknown", nil
	case err != nil:
		return "", err
	}
	switch st := comp.GetStatus(); st {
	case "identical", "ahead", "behind", "diverged":
		return st, nil
	default:
		return "", s.masked(fmt.Errorf("github: %s: unknown status %q", op, st))
	}
}

// compare asks GitHub's compare for base...head. When GitHub does not know
// base or head (404 or 422, not a rate limit) it returns that status as
// unknown and no error; other errors are translated.
func (s *Source) compare(ctx context.Context, op, base, head string, opts *gh.ListOptions) (comp *gh.CommitsComparison, unknown int, err error) {
	err = s.do(ctx, op, func(ctx context.Context) (*gh.Response, error) {
		c, resp, err := s.client.Repositories.CompareCommits(ctx, s.owner, s.repo, base, head, opts)
		comp = c
		return resp, err
	})
	if err == nil {
		return comp, 0, nil
	}
	if rateLimitOf(err, s.now()) == nil {
		switch st := statusOf(err); st {
		case http.StatusNotFound, http.StatusUnprocessableEntity:
			return nil, st, nil
		}
	}
	return nil, 0, s.translate(op, err)
}
