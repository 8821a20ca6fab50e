package main

import (
	"context"
	"fmt"
	"io"

	"github.com/knue/syncjob/internal/config"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/report"
	"github.com/knue/syncjob/internal/wire"
)

// listing runs a command that prints one kind of registry value: it parses
// its flags (--json), opens the registry read-only (it works while a sync
// runs), reads, and prints JSON or a table. read returns what it could read
// and an error naming what it could not: then what it read is printed,
// none of it when nothing was, and the command fails (exit 1), never "0
// dead letters" while one is unreadable (an adversarial helper's find).
func listing[T any](ctx context.Context, p *program, h help, args []string,
	read func(context.Context, *registry.Registry) ([]T, error), table func(io.Writer, []T)) error {
	fs := p.flagSet(h.name)
	asJSON := config.BoolVar(fs, "json", "print JSON")
	cfg, _, err := p.parse(fs, h, args)
	if err != nil {
		return err
	}
	_, reg, closeReg, err := p.open(cfg, wire.ReadAccess)
	if err != nil {
		return err
	}
	defer closeReg()
	values, err := read(ctx, reg)
	switch {
	case err != nil && len(values) == 0:
	case *asJSON:
		report.PrintJSON(p.stdout, values)
	default:
		table(p.stdout, values)
	}
	if err != nil { // what could be read is shown; say what could not
		return cfg.Redact(fmt.Errorf("%s: %w", h.name, err))
	}
	return nil
}
