package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/knue/syncjob/internal/github"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/redact"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare"
	"github.com/knue/syncjob/internal/syncer"
)

// leaseTTL bounds how long a crashed run keeps others out of Workers KV: the
// Lambda's timeout (300 s) and a minute. A run of 10,000 policies takes
// about 400 requests, well inside it.
const leaseTTL = 6 * time.Minute

// flagSet returns the flag set of "syncjob NAME"; its errors go to stderr.
func (p *program) flagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("syncjob "+name, flag.ContinueOnError)
	fs.SetOutput(p.stderr)
	return fs
}

// parse binds every setting to fs, parses args (the command's own flags
// already bound) and returns the configuration. cmd names the command in
// the usage text.
func (p *program) parse(fs *flag.FlagSet, cmd string, args []string) (Config, error) {
	load := bindConfig(fs, p.getenv)
	fs.Usage = func() {
		fmt.Fprintf(p.stderr, "Usage: syncjob %s [flags]\n\nEvery setting is a flag and an environment variable; the flag wins.\n\n", cmd)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return Config{}, err
		}
		return Config{}, &exitError{code: exitUsage} // the flag package said why
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(p.stderr, "syncjob %s: unexpected argument %q\n", cmd, fs.Arg(0))
		return Config{}, &exitError{code: exitUsage}
	}
	return load()
}

// open returns the logger and the registry of a command; the caller closes
// the registry with the function returned.
func (p *program) open(cfg Config) (*slog.Logger, *registry.Registry, func(), error) {
	logger := newLogger(cfg, p.stderr, p.isTerminal(p.stderr))
	reg, closeReg, err := openRegistryWith(cfg, p.deps, logger)
	if err != nil {
		logger.Error("registry unavailable", logkey.Error, err)
		return nil, nil, nil, &exitError{exitUsage, redact.Error(err, cfg.secrets()...)}
	}
	return logger, reg, closeReg, nil
}

// openRegistryWith opens the configured registry: Cloudflare Workers KV when
// its three settings are set, else the embedded file at REGISTRY_PATH.
func openRegistryWith(cfg Config, d deps, logger *slog.Logger) (*registry.Registry, func(), error) {
	var store registry.Store
	if cfg.cloudflare() {
		ccfg := cloudflare.Config{
			AccountID: cfg.CFAccountID, NamespaceID: cfg.CFNamespaceID, APIToken: cfg.CFAPIToken,
			BaseURL: cfg.CFAPIURL, Now: d.now,
		}
		if logger != nil {
			ccfg.Logger = logger // the store adds its own "component"
		}
		if d.httpClient != nil {
			ccfg.Sleep = d.httpClient.sleep
		}
		s, err := cloudflare.New(ccfg)
		if err != nil {
			return nil, nil, err
		}
		store = s
	} else {
		b, err := registry.OpenBolt(cfg.RegistryPath, d.now)
		if err != nil {
			return nil, nil, err
		}
		store = b
	}
	return registry.New(store), func() { _ = store.Close() }, nil
}

// newSyncer builds the GitHub source and the syncer of a run from cfg; the
// CLI and the Lambda handler share it. progress may be nil.
func newSyncer(cfg Config, d deps, reg *registry.Registry, logger *slog.Logger, progress func(done, total int)) (*syncer.Syncer, error) {
	owner, name, _ := strings.Cut(cfg.Repo, "/")
	gcfg := github.Config{
		Owner: owner, Repo: name, Branch: cfg.Branch,
		Token:    cfg.GitHubToken,
		BaseURL:  cfg.GitHubAPIURL,
		Logger:   logger,
		Progress: progress,
	}
	if d.httpClient != nil {
		gcfg.Sleep = d.httpClient.sleep
	}
	src, err := github.New(gcfg)
	if err != nil {
		return nil, err
	}
	return &syncer.Syncer{
		Source: src, Registry: reg,
		Repo: cfg.Repo, Branch: cfg.Branch,
		Logger: logger, Now: d.now,
	}, nil
}

// syncOptions completes opt (mode, dry run, trigger) with the settings of c.
func (c Config) syncOptions(opt syncer.Options) syncer.Options {
	opt.MaxFileSize = c.MaxFileSize
	opt.BatchSize = c.BatchSize
	opt.Concurrency = c.Concurrency
	opt.ReconcileInterval = c.ReconcileInterval
	opt.DailyWriteBudget = c.DailyWriteBudget
	if c.cloudflare() {
		// Workers KV can be written by anyone with the token: take the
		// advisory lease. The embedded file is locked by its one process.
		opt.LeaseTTL = leaseTTL
	}
	return opt
}
