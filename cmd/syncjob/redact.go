package main

import (
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/redact"
)

// What syncjob prints of a run, it prints through these: a file's title or
// a server's error message may quote a token. The masking itself is
// internal/redact's.

// secrets returns the values that must never be printed: the tokens, and
// credentials written into an API URL ("https://user:secret@host/").
func (c Config) secrets() []string {
	var out []string
	for _, s := range []string{c.GitHubToken, c.CFAPIToken} {
		if s != "" {
			out = append(out, s)
		}
	}
	out = append(out, redact.URLSecrets(c.GitHubAPIURL)...)
	return append(out, redact.URLSecrets(c.CFAPIURL)...)
}

// redact returns err with every secret of c masked; nil stays nil.
func (c Config) redact(err error) error { return redact.Error(err, c.secrets()...) }

// redactSummary removes secrets from the free-text fields of a summary.
func redactSummary(s policy.RunSummary, secrets []string) policy.RunSummary {
	s.Error = redact.String(s.Error, secrets...)
	if len(s.Failures) > 0 {
		f := make([]policy.Failure, len(s.Failures))
		for i, x := range s.Failures {
			f[i] = policy.Failure{PolicyName: x.PolicyName, Error: redact.String(x.Error, secrets...)}
		}
		s.Failures = f
	}
	s.ModeReason = redact.String(s.ModeReason, secrets...)
	return s
}

// redactPlan removes secrets from the text of a plan: names, paths, titles
// (read from the files) and reasons. The slices are copied; nil stays nil.
func redactPlan(p policy.Plan, secrets []string) policy.Plan {
	str := func(s string) string { return redact.String(s, secrets...) }
	out := policy.Plan{Unchanged: p.Unchanged}
	if p.Items != nil {
		out.Items = make([]policy.Item, len(p.Items))
		for i, it := range p.Items {
			it.PolicyName, it.Path, it.OldPath, it.Title = str(it.PolicyName), str(it.Path), str(it.OldPath), str(it.Title)
			out.Items[i] = it
		}
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
