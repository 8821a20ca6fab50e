package config_test

import (
	"errors"
	"flag"
	"io"
	"testing"

	"github.com/knue/syncjob/internal/config"
	"github.com/knue/syncjob/internal/policy"
)

// TestValidate_BatchSize_UpToCloudflaresBulkLimit: BATCH_SIZE takes any
// size a Cloudflare bulk request takes (1-10,000 pairs) and nothing else;
// the default stays 50.
func TestValidate_BatchSize_UpToCloudflaresBulkLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value string
		want  int // 0: refused
	}{{"", 50}, {"1", 1}, {"51", 51}, {"10000", 10000}, {"0", 0}, {"10001", 0}} {
		fs := flag.NewFlagSet("sync", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		env := map[string]string{"GITHUB_REPO": "knue/policies", "BATCH_SIZE": tc.value}
		done := config.Bind(fs, func(k string) string { return env[k] }, config.Source|config.Registry|config.Run)
		if err := fs.Parse(nil); err != nil {
			t.Fatal(err)
		}
		c, err := done()
		var ce *policy.ConfigError
		switch {
		case tc.want == 0 && (!errors.As(err, &ce) || ce.Setting != "BATCH_SIZE"):
			t.Errorf("BATCH_SIZE=%q: err %v, want a config error naming BATCH_SIZE", tc.value, err)
		case tc.want != 0 && (err != nil || c.BatchSize != tc.want):
			t.Errorf("BATCH_SIZE=%q: %d, %v; want %d", tc.value, c.BatchSize, err, tc.want)
		}
	}
}

// GITHUB_BRANCH takes what git takes as a branch name; anything else is a
// configuration error naming it, before any request (review: a space only
// failed at GitHub).
func TestValidate_Branch_WhatGitTakes(t *testing.T) {
	t.Parallel()
	for branch, ok := range map[string]bool{
		"main": true, "release/2026": true, "규정/개정-안": true, "v1.0": true, "a@b": true,
		"my branch": false, "a..b": false, "-x": false, "x.": false, "x/": false, "/x": false, "a//b": false,
		".x": false, "a/.x": false, "x.lock": false, "a@{1}": false, "a~1": false, "a^": false, "a:b": false,
		"a?": false, "a*": false, "a[b": false, `a\b`: false, "a\tb": false, "@": false,
	} {
		fs := flag.NewFlagSet("sync", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		env := map[string]string{"GITHUB_REPO": "knue/policies", "GITHUB_BRANCH": branch}
		done := config.Bind(fs, func(k string) string { return env[k] }, config.Source|config.Registry|config.Run)
		if err := fs.Parse(nil); err != nil {
			t.Fatal(err)
		}
		c, err := done()
		if err == nil {
			err = c.ValidateSource() // what sync and the Lambda check
		}
		var ce *policy.ConfigError
		switch {
		case ok && err != nil:
			t.Errorf("GITHUB_BRANCH=%q: %v, want it taken", branch, err)
		case !ok && (!errors.As(err, &ce) || ce.Setting != "GITHUB_BRANCH"):
			t.Errorf("GITHUB_BRANCH=%q: %v, want a configuration error naming GITHUB_BRANCH", branch, err)
		}
	}
}
