package redact

import (
	"log/slog"
	"slices"

	"github.com/knue/syncjob/internal/policy"
)

// What syncjob prints, logs or returns of a run, it passes through these: a
// file's title or a server's error message may quote a token.

// Attr masks secrets in a log attribute: a string, or an error's message.
func Attr(a slog.Attr, secrets []string) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, String(v.String(), secrets...))
	case slog.KindAny:
		// Errors are where a secret could hide (a URL, a server's echo);
		// the other values logged are our own counts and names.
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, String(err.Error(), secrets...))
		}
	}
	return a
}

// Summary removes secrets from the free-text fields of a summary.
func Summary(s policy.RunSummary, secrets []string) policy.RunSummary {
	s.Error = String(s.Error, secrets...)
	if len(s.Failures) > 0 {
		f := make([]policy.Failure, len(s.Failures))
		for i, x := range s.Failures {
			f[i] = policy.Failure{PolicyName: x.PolicyName, Error: String(x.Error, secrets...)}
		}
		s.Failures = f
	}
	s.ModeReason = String(s.ModeReason, secrets...)
	return s
}

// Plan removes secrets from the text of a plan: names, paths, titles
// (read from the files) and reasons. The slices are copied; nil stays nil.
func Plan(p policy.Plan, secrets []string) policy.Plan {
	str := func(s string) string { return String(s, secrets...) }
	out := policy.Plan{Unchanged: p.Unchanged, Omitted: p.Omitted}
	out.Items = p.Items // copied only when a secret is masked: a plan may hold 200,000 items
	for i, it := range p.Items {
		it.PolicyName, it.Path, it.Title = str(it.PolicyName), str(it.Path), str(it.Title)
		if old := it.OldPath(); str(old) != old { // the item's Old is shared: replaced, not written
			it.Old = &policy.Old{Path: str(old), SHA: it.OldSHA()}
		}
		if was := p.Items[i]; it.PolicyName == was.PolicyName && it.Path == was.Path && it.Title == was.Title && it.Old == was.Old {
			continue
		}
		if &out.Items[0] == &p.Items[0] {
			out.Items = slices.Clone(p.Items)
		}
		out.Items[i] = it
	}
	if p.Skipped != nil {
		out.Skipped = make([]policy.Skip, len(p.Skipped))
		for i, sk := range p.Skipped {
			out.Skipped[i] = policy.Skip{PolicyName: str(sk.PolicyName), Path: str(sk.Path), Reason: str(sk.Reason)}
		}
	}
	if p.Conflicts != nil {
		out.Conflicts = make([]policy.Conflict, len(p.Conflicts))
		for i, c := range p.Conflicts {
			losers := make([]string, len(c.Losers))
			for j, l := range c.Losers {
				losers[j] = str(l)
			}
			out.Conflicts[i] = policy.Conflict{PolicyName: str(c.PolicyName), Winner: str(c.Winner), Losers: losers}
		}
	}
	return out
}
