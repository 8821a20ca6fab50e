package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/knue/syncjob/internal/config"
	"github.com/knue/syncjob/internal/github"
	"github.com/knue/syncjob/internal/lambda"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare"
	"github.com/knue/syncjob/internal/report"
	"github.com/knue/syncjob/internal/syncer"
)

// access is how a command uses the registry; on the embedded file it
// decides the lock taken and whether a missing file is created.
type access int

const (
	// readAccess: list, status. The file must exist; nothing is locked,
	// created or written, so it works beside a sync and on a read-only file.
	readAccess access = iota
	// planAccess: sync --dry-run. As readAccess, but a missing file is an
	// empty registry: the plan of a first run.
	planAccess
	// changeAccess: deadletter retry and drop, lease release. The writer's
	// lock; the file must exist.
	changeAccess
	// syncAccess: sync. The writer's lock; a missing file is created.
	syncAccess
)

// open returns the logger and the registry of a command; the caller closes
// the registry with the function returned.
func (p *program) open(cfg config.Config, a access) (*slog.Logger, *registry.Registry, func(), error) {
	logger := report.NewLogger(cfg, p.stderr, p.errTerminal)
	var onWait func(time.Duration, string)
	if p.progress != nil {
		onWait = p.progress.Wait
	}
	reg, closeReg, err := openRegistry(cfg, p.deps, logger, a, onWait)
	var ce *policy.ConfigError
	switch {
	case errors.As(err, &ce):
		return nil, nil, nil, err // a setting, named: exit 2
	case err != nil:
		logger.Error("registry unavailable", logkey.Error, err)
		err = cfg.Redact(err)
		if errors.Is(err, registry.ErrInUse) {
			return nil, nil, nil, err // a run in progress: exit 1
		}
		return nil, nil, nil, &exitError{exitUsage, err}
	}
	return logger, reg, closeReg, nil
}

// openRegistry opens the configured registry: Cloudflare Workers KV when
// its three settings are set, else the embedded file at REGISTRY_PATH.
// onWait, when not nil, hears each wait of Cloudflare's rate limits.
func openRegistry(cfg config.Config, d deps, logger *slog.Logger, a access, onWait func(time.Duration, string)) (*registry.Registry, func(), error) {
	var store registry.Store
	var err error
	if cfg.Cloudflare() {
		store, err = openCloudflare(cfg, d, logger, onWait)
	} else {
		store, err = openBolt(cfg.RegistryPath, d.now, logger, a)
	}
	if err != nil {
		return nil, nil, err
	}
	return registry.New(store), func() { _ = store.Close() }, nil
}

func openCloudflare(cfg config.Config, d deps, logger *slog.Logger, onWait func(time.Duration, string)) (registry.Store, error) {
	ccfg := cloudflare.Config{
		AccountID: cfg.CFAccountID, NamespaceID: cfg.CFNamespaceID, APIToken: cfg.CFAPIToken,
		BaseURL: cfg.CFAPIURL, Now: d.now, OnWait: onWait,
	}
	if logger != nil {
		ccfg.Logger = logger // the store adds its own "component"
	}
	if d.httpClient != nil {
		ccfg.Sleep = d.httpClient.sleep
	}
	return cloudflare.New(ccfg)
}

func openBolt(path string, now func() time.Time, logger *slog.Logger, a access) (registry.Store, error) {
	missing := &policy.ConfigError{Setting: "REGISTRY_PATH", Problem: fmt.Sprintf("registry file %s does not exist (syncjob sync creates it; or set REGISTRY_PATH to the registry file)", path)}
	switch a {
	case readAccess, planAccess:
		b, err := registry.OpenBoltReadOnly(path, now)
		if errors.Is(err, fs.ErrNotExist) {
			if a == readAccess {
				return nil, missing
			}
			logger.Warn("registry file missing: planning against an empty registry", logkey.Path, path)
			return registry.NewMemory(now), nil
		}
		return b, err
	case changeAccess:
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, missing
		}
	}
	return registry.OpenBolt(path, now)
}

// newSyncer builds the GitHub source and the syncer of a run from cfg; the
// CLI and the Lambda handler share it. progress may be nil: no one watches.
func newSyncer(cfg config.Config, d deps, reg *registry.Registry, logger *slog.Logger, progress syncer.Progress) (*syncer.Syncer, error) {
	owner, name, _ := strings.Cut(cfg.Repo, "/")
	gcfg := github.Config{
		Owner: owner, Repo: name, Branch: cfg.Branch,
		Token:   cfg.GitHubToken,
		BaseURL: cfg.GitHubAPIURL,
		Logger:  logger,
	}
	if progress != nil {
		gcfg.Progress = progress.Advance // the files read for titles
	}
	var sleep func(context.Context, time.Duration) error
	if d.httpClient != nil {
		gcfg.Sleep, sleep = d.httpClient.sleep, d.httpClient.sleep
	}
	src, err := github.New(gcfg)
	if err != nil {
		return nil, err
	}
	s := &syncer.Syncer{
		Source: src, Registry: reg,
		Repo: cfg.Repo, Branch: cfg.Branch,
		Logger: logger, Now: d.now, Sleep: sleep, Progress: progress,
	}
	if s.Mirror, err = openMirror(cfg, d); err != nil {
		return nil, err
	}
	s.MirrorPrefix = cfg.Content.KeyPrefix()
	return s, nil
}

// openMirror builds the content mirror's target, nil when none is
// configured. It makes no request.
func openMirror(cfg config.Config, d deps) (mirror.Target, error) {
	mcfg := cfg.MirrorConfig()
	if !mcfg.Enabled() {
		return nil, nil
	}
	if d.httpClient != nil {
		mcfg.Sleep, mcfg.HTTPClient = d.httpClient.sleep, d.httpClient.mirror
	}
	t, err := mirror.New(context.Background(), mcfg)
	if err != nil {
		return nil, cfg.Redact(err)
	}
	return t, nil
}

// lambdaJob configures a Lambda invocation as the CLI configures a sync: the
// same settings (no flags), read after internal/lambda resolved the secret
// references.
func lambdaJob(d deps) lambda.Configure {
	return func(getenv func(string) string, logs io.Writer) (lambda.Job, error) {
		fs := flag.NewFlagSet("syncjob lambda", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		load := config.Bind(fs, getenv, config.Source|config.Registry|config.Run|config.Logging|config.Mirror)
		if err := fs.Parse(nil); err != nil {
			return lambda.Job{}, err
		}
		cfg, err := load()
		if err == nil {
			err = cfg.ValidateSource()
		}
		if err != nil {
			return lambda.Job{}, err
		}
		return lambda.Job{
			Repo: cfg.Repo, Branch: cfg.Branch, Secrets: cfg.Secrets(),
			Logger: report.NewLogger(cfg, logs, false),
			OpenRegistry: func(dry bool, logger *slog.Logger) (*registry.Registry, func(), error) {
				a := syncAccess
				if dry {
					a = planAccess
				}
				return openRegistry(cfg, d, logger, a, nil)
			},
			NewSyncer: func(reg *registry.Registry, logger *slog.Logger) (*syncer.Syncer, error) {
				return newSyncer(cfg, d, reg, logger, nil)
			},
			Options: cfg.SyncOptions,
		}, nil
	}
}
