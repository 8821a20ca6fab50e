package syncer

import (
	"context"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
)

// readTitles reads the content of every add and update to take its title;
// the differ turns empty and oversized content into skips and unreadable
// files into failures (never deletes). An error aborts the run (a rate
// limit, a configuration error, the context).
func (r *run) readTitles(ctx context.Context, head string, plan policy.Plan, entries map[string]policy.Entry) (policy.Plan, []policy.Failure, error) {
	files := differ.Unread(plan)
	read := map[string]differ.Content{}
	var readErrs map[string]error
	if len(files) > 0 {
		r.log.Info("reading contents", logkey.Files, len(files))
		contents, errs, err := r.Source.Contents(ctx, head, files)
		if err != nil {
			return plan, nil, err
		}
		readErrs = errs
		for _, f := range files {
			if body, ok := contents[f.Path]; ok {
				read[f.Path] = differ.Content{Size: int64(len(body)), Title: policy.Title(body, policy.NameOf(f.Path))}
			}
		}
	}
	plan, failures := differ.WithContent(plan, read, readErrs, entries, r.opt.differ())
	for _, f := range failures {
		r.log.Warn("content unreadable", logkey.Policy, f.PolicyName, logkey.Error, f.Error)
	}
	return plan, failures, nil
}
