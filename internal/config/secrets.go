package config

import (
	"github.com/knue/syncjob/internal/redact"
)

// What syncjob prints of a run, it prints through these: a file's title or
// a server's error message may quote a token. The masking itself is
// internal/redact's.

// Secrets returns the values that must never be printed: the tokens, and
// credentials written into an API URL ("https://user:secret@host/").
func (c Config) Secrets() []string {
	var out []string
	for _, s := range []string{c.GitHubToken, c.CFAPIToken, c.Content.SecretAccessKey} {
		if s != "" {
			out = append(out, s)
		}
	}
	out = append(out, redact.URLSecrets(c.GitHubAPIURL)...)
	return append(out, redact.URLSecrets(c.CFAPIURL)...)
}

// Redact returns err with every secret of c masked; nil stays nil.
func (c Config) Redact(err error) error { return redact.Error(err, c.Secrets()...) }
