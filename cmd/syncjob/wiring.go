package main

import (
	"errors"
	"log/slog"
	"time"

	"github.com/knue/syncjob/internal/config"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/report"
	"github.com/knue/syncjob/internal/wire"
)

// open returns the logger and the registry of a command; the caller closes
// the registry with the function returned.
func (p *program) open(cfg config.Config, a wire.Access) (*slog.Logger, *registry.Registry, func(), error) {
	logger := report.NewLogger(cfg, p.stderr, p.errTerminal)
	var onWait func(time.Duration, string)
	if p.progress != nil {
		onWait = p.progress.Wait
	}
	reg, closeReg, err := wire.OpenRegistry(cfg, p.deps.hooks(), logger, a, onWait)
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

// hooks are the test hooks of d as the adapters take them.
func (d deps) hooks() wire.Hooks {
	h := wire.Hooks{Now: d.now}
	if d.httpClient != nil {
		h.Sleep, h.MirrorHTTP = d.httpClient.sleep, d.httpClient.mirror
	}
	return h
}
