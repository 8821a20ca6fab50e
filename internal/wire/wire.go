// Package wire builds a run's adapters from its configuration: the registry
// (Workers KV, or the embedded file), the GitHub source, the content mirror
// and the syncer. The CLI (cmd/syncjob) and the Lambda functions share it, so
// a Lambda run is configured exactly as a CLI run.
package wire

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
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

// Hooks are what a test replaces; the zero value is production.
type Hooks struct {
	Now        func() time.Time                                 // nil: time.Now
	Sleep      func(ctx context.Context, d time.Duration) error // every adapter's waits; nil: real ones
	MirrorHTTP *http.Client                                     // the content mirror's client; nil: its own
}

// Access is how a command uses the registry; on the embedded file it
// decides the lock taken and whether a missing file is created.
type Access int

const (
	// ReadAccess: list, status. The file must exist; nothing is locked,
	// created or written, so it works beside a sync and on a read-only file.
	ReadAccess Access = iota
	// PlanAccess: sync --dry-run. As ReadAccess, but a missing file is an
	// empty registry: the plan of a first run.
	PlanAccess
	// ChangeAccess: deadletter retry and drop, lease release. The writer's
	// lock; the file must exist.
	ChangeAccess
	// SyncAccess: sync. The writer's lock; a missing file is created.
	SyncAccess
)

// OpenRegistry opens the configured registry: Cloudflare Workers KV when
// its three settings are set, else the embedded file at REGISTRY_PATH.
// onWait, when not nil, hears each wait of Cloudflare's rate limits.
func OpenRegistry(cfg config.Config, h Hooks, logger *slog.Logger, a Access, onWait func(time.Duration, string)) (*registry.Registry, func(), error) {
	var store registry.Store
	var err error
	if cfg.Cloudflare() {
		store, err = openCloudflare(cfg, h, logger, onWait)
	} else {
		store, err = openBolt(cfg.RegistryPath, h.Now, logger, a)
	}
	if err != nil {
		return nil, nil, err
	}
	return registry.New(store), func() { _ = store.Close() }, nil
}

func openCloudflare(cfg config.Config, h Hooks, logger *slog.Logger, onWait func(time.Duration, string)) (registry.Store, error) {
	ccfg := cloudflare.Config{
		AccountID: cfg.CFAccountID, NamespaceID: cfg.CFNamespaceID, APIToken: cfg.CFAPIToken,
		BaseURL: cfg.CFAPIURL, Now: h.Now, OnWait: onWait, Sleep: h.Sleep,
	}
	if logger != nil {
		ccfg.Logger = logger // the store adds its own "component"
	}
	return cloudflare.New(ccfg)
}

func openBolt(path string, now func() time.Time, logger *slog.Logger, a Access) (registry.Store, error) {
	missing := &policy.ConfigError{Setting: "REGISTRY_PATH", Problem: fmt.Sprintf("registry file %s does not exist (syncjob sync creates it; or set REGISTRY_PATH to the registry file)", path)}
	switch a {
	case ReadAccess, PlanAccess:
		b, err := registry.OpenBoltReadOnly(path, now)
		if errors.Is(err, fs.ErrNotExist) {
			if a == ReadAccess {
				return nil, missing
			}
			logger.Warn("registry file missing: planning against an empty registry", logkey.Path, path)
			return registry.NewMemory(now), nil
		}
		return b, err
	case ChangeAccess:
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, missing
		}
	}
	return registry.OpenBolt(path, now)
}

// NewSyncer builds the GitHub source and the syncer of a run from cfg; the
// CLI and the Lambda handler share it. progress may be nil: no one watches.
func NewSyncer(cfg config.Config, h Hooks, reg *registry.Registry, logger *slog.Logger, progress syncer.Progress) (*syncer.Syncer, error) {
	owner, name, _ := strings.Cut(cfg.Repo, "/")
	gcfg := github.Config{
		Owner: owner, Repo: name, Branch: cfg.Branch,
		Token:   cfg.GitHubToken,
		BaseURL: cfg.GitHubAPIURL,
		Logger:  logger,
		Sleep:   h.Sleep,
	}
	if progress != nil {
		gcfg.Progress = progress.Advance // the files read for titles
	}
	src, err := github.New(gcfg)
	if err != nil {
		return nil, err
	}
	s := &syncer.Syncer{
		Source: src, Registry: reg,
		Repo: cfg.Repo, Branch: cfg.Branch,
		Logger: logger, Now: h.Now, Sleep: h.Sleep, Progress: progress,
	}
	if s.Mirror, err = openMirror(cfg, h); err != nil {
		return nil, err
	}
	s.MirrorPrefix = cfg.Content.KeyPrefix()
	return s, nil
}

// openMirror builds the content mirror's target, nil when none is
// configured. It makes no request.
func openMirror(cfg config.Config, h Hooks) (mirror.Target, error) {
	mcfg := cfg.MirrorConfig()
	if !mcfg.Enabled() {
		return nil, nil
	}
	if h.Sleep != nil {
		mcfg.Sleep = h.Sleep
	}
	if h.MirrorHTTP != nil {
		mcfg.HTTPClient = h.MirrorHTTP
	}
	t, err := mirror.New(context.Background(), mcfg)
	if err != nil {
		return nil, cfg.Redact(err)
	}
	return t, nil
}

// LambdaJob configures a Lambda invocation as the CLI configures a sync: the
// same settings (no flags), read after internal/lambda resolved the secret
// references.
func LambdaJob(h Hooks) lambda.Configure {
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
				a := SyncAccess
				if dry {
					a = PlanAccess
				}
				return OpenRegistry(cfg, h, logger, a, nil)
			},
			NewSyncer: func(reg *registry.Registry, logger *slog.Logger) (*syncer.Syncer, error) {
				return NewSyncer(cfg, h, reg, logger, nil)
			},
			Options: cfg.SyncOptions,
		}, nil
	}
}
