package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/syncer"
)

// Exit codes (DESIGN.md "Interface").
const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	exitPartial = 3
	exitRefused = 4
)

const usage = `syncjob keeps a policy registry equal to the markdown policies of a GitHub branch.

Usage:
  syncjob sync [--full] [--dry-run] [--json] [--allow-mass-delete] [settings]
  syncjob list [--json] [settings]
  syncjob status [--json] [--runs N] [settings]
  syncjob queue list [--json] [settings]
  syncjob deadletter list [--json] | retry NAME | drop NAME [--yes]
  syncjob webhook verify [--secret-env VAR] [--signature SIG | --headers FILE] < BODY

Commands:
  sync        read the branch head and bring the registry up to date
  list        print the registry's policies
  status      last run, time since the last success, queue depth, dead letters, recent runs
  queue       list the queue entries (retries waiting, work for the re-indexer)
  deadletter  list the entries given up after 3 failures; retry one (back to the
              queue for the next run) or drop it (asks first on a terminal)
  webhook     verify a captured GitHub delivery's signature, as the receiver does

Exit codes: 0 ok (also nothing to do), 1 failed, 2 usage or configuration error,
3 partial (failures recorded for retry), 4 refused by a safety guard.

Run "syncjob COMMAND --help" for every setting, its environment variable and its default.
`

// env is how the program reads its environment; tests pass a map.
type env func(string) string

// deps lets tests replace what the real program takes from the world.
type deps struct {
	now           func() time.Time
	stdin         io.Reader // answers to confirmations
	stdinTerminal bool
	httpClient    *githubHTTP
	isTerminal    func(w io.Writer) bool
}

// githubHTTP carries test-only knobs of the API adapters (GitHub, Cloudflare).
type githubHTTP struct {
	sleep func(ctx context.Context, d time.Duration) error
}

// command is one command of syncjob ("sync", "list", ...). Run parses the
// arguments after the command's name; its error decides the exit code.
type command interface {
	Run(ctx context.Context, args []string) error
}

// program is what every command takes from the world: the environment, the
// output streams and the deps.
type program struct {
	getenv         env
	stdout, stderr io.Writer
	deps
}

// runWith runs the command of args and returns the process's exit code.
func runWith(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer, d deps) int {
	if d.now == nil {
		d.now = time.Now
	}
	if d.isTerminal == nil {
		d.isTerminal = isTerminal
	}
	p := &program{getenv: getenv, stdout: stdout, stderr: stderr, deps: d}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmd, ok := p.command(args[0])
	if !ok {
		fmt.Fprintf(stderr, "syncjob: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	return p.report(cmd.Run(ctx, args[1:]))
}

func (p *program) command(name string) (command, bool) {
	switch name {
	case "sync":
		return &syncCommand{p}, true
	case "list":
		return &listCommand{p}, true
	case "status":
		return &statusCommand{p}, true
	case "queue":
		return &queueCommand{p}, true
	case "deadletter":
		return &deadLetterCommand{p}, true
	case "webhook":
		return &webhookCommand{p}, true
	}
	return nil, false
}

// report prints what err says, unless it was said already, and returns its
// exit code.
func (p *program) report(err error) int {
	var ee *exitError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.As(err, &ee) && ee.err == nil:
	default:
		fmt.Fprintln(p.stderr, "syncjob:", err)
	}
	return exitCode(err)
}

// exitError gives err an exit code of its own. A nil err means nothing is
// left to say: the command said it already.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitCode maps the outcome of a command to DESIGN.md's exit codes.
func exitCode(err error) int {
	var ee *exitError
	var ce *ConfigError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ce), errors.Is(err, policy.ErrConfig):
		return exitUsage
	case errors.Is(err, syncer.ErrRefused):
		return exitRefused
	case errors.Is(err, syncer.ErrPartial):
		return exitPartial
	default:
		return exitFailed
	}
}
