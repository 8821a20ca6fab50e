package syncer

import (
	"context"
	"fmt"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
)

// readTitles reads the content of every add and update to take its title;
// the differ turns empty and oversized content into skips and unreadable
// files into failures (never deletes). An error aborts the run (a rate
// limit, a configuration error, the context).
func (r *run) readTitles(ctx context.Context, head string, plan policy.Plan, entries map[string]policy.Entry, desired map[string]policy.Desired) (policy.Plan, []policy.Failure, error) {
	files := differ.Unread(plan, desired)
	var (
		read     map[string]policy.Content
		readErrs map[string]error
	)
	if len(files) > 0 {
		r.log.Info("reading contents", logkey.Files, len(files))
		var err error
		if read, readErrs, err = r.Source.Titles(ctx, head, files, r.opt.MaxFileSize); err != nil {
			return plan, nil, err
		}
	}
	plan, failures := differ.WithContent(plan, read, readErrs, entries, r.opt.differ())
	for _, f := range failures {
		r.log.Warn("content unreadable", logkey.Policy, f.PolicyName, logkey.Error, f.Error)
	}
	return plan, failures, nil
}

// outage says whether every read of files failed (see ErrOutage).
func outage(files []policy.File, failures []policy.Failure) error {
	if len(files) == 0 || len(failures) < len(files) {
		return nil
	}
	return fmt.Errorf("%w: all %d file reads failed, e.g. %s: %s", ErrOutage, len(files), failures[0].PolicyName, failures[0].Error)
}
