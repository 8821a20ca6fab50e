package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/report"
	"github.com/knue/syncjob/internal/syncer"
)

// Exit codes (README.md, "Operate").
const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	exitPartial = 3
	exitRefused = 4
	// exitPending: sync --dry-run --detailed-exitcode found changes to
	// write (terraform plan's -detailed-exitcode, whose 2 is taken here).
	exitPending = 5
)

const usage = `syncjob keeps a policy registry equal to the markdown policies of a GitHub branch.

Usage:
  syncjob sync [--full] [--dry-run [--detailed-exitcode]] [--json] [--quiet]
               [--allow-mass-delete[=N]] [--allow-rewind] [--expect-head SHA] [settings]
  syncjob list [--json] [settings]
  syncjob status [--json] [--check] [--runs N] [settings]
  syncjob runs [--json] [--limit N] | show RUN [--json] [settings]
  syncjob queue list [--json] [settings]
  syncjob deadletter list [--json] | retry NAME | retry --all | drop NAME [--yes]
  syncjob lease show [--json] | release --id ID [--yes]
  syncjob webhook verify [--secret-env VAR] [--signature SIG | --headers FILE] < BODY
  syncjob version

Commands:
  sync        read the branch head and bring the registry up to date
  list        print the registry's policies
  status      what the registry holds and the job did last; --check is a health check
  runs        the recent runs, one line each; "runs show RUN": what one run changed
  queue       list the queue entries (retries waiting, work for the re-indexer)
  deadletter  list the entries given up after 3 failures; retry them (back to the
              queue for the next run) or drop one (asks first)
  lease       show the single-writer lease, or release one a crashed run left
  webhook     verify a captured GitHub delivery's signature, as the receiver does
  version     the version and source revision of this binary

Exit codes: 0 ok (also nothing to do), 1 failed, 2 usage or configuration error,
3 partial (failures queued, versions held back, changes waiting, reads unverified),
4 refused by a safety guard, 5 changes pending (sync --dry-run --detailed-exitcode only).

Run "syncjob COMMAND --help" for its flags and the settings it reads, each an
environment variable too, with its default.
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
	buildInfo     func() (*debug.BuildInfo, bool)
}

// githubHTTP carries test-only knobs of the API adapters (GitHub, Cloudflare).
type githubHTTP struct {
	sleep  func(ctx context.Context, d time.Duration) error
	mirror *http.Client // the content mirror's client (one that trusts a test S3 server)
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
	// errTerminal is set when stderr is a terminal; line then keeps the
	// progress line there, and stderr writes through it.
	errTerminal bool
	line        *report.StatusLine
	// progress is a sync's progress on that line (sync.go); nil when none
	// is drawn, and for every other command.
	progress *report.Progress
	deps
}

// runWith runs the command of args and returns the process's exit code.
func runWith(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer, d deps) int {
	if d.now == nil {
		d.now = time.Now
	}
	if d.isTerminal == nil {
		d.isTerminal = report.IsTerminal
	}
	if d.buildInfo == nil {
		d.buildInfo = debug.ReadBuildInfo
	}
	p := &program{getenv: getenv, stdout: stdout, stderr: stderr, deps: d}
	if p.errTerminal = d.isTerminal(stderr); p.errTerminal {
		p.line = report.NewStatusLine(stderr)
		p.stderr = p.line
	}
	switch {
	case len(args) == 0:
		fmt.Fprint(p.stderr, usage)
		return exitUsage
	case args[0] == "-h" || args[0] == "--help" || (args[0] == "help" && len(args) == 1):
		fmt.Fprint(p.stderr, usage)
		return exitOK
	case args[0] == "help": // "syncjob help sync" is "syncjob sync --help"
		args = append(slices.Clone(args[1:]), "--help")
	case args[0] == "--version" || args[0] == "-version":
		args = append([]string{"version"}, args[1:]...)
	}
	cmd, ok := p.command(args[0])
	if !ok {
		return p.report(usageError("", fmt.Sprintf("unknown command %q", args[0])))
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
	case "runs":
		return &runsCommand{p}, true
	case "queue":
		return &subcommands{p: p, name: "queue", about: queueUsage, subs: map[string]command{
			"list": &queueListCommand{p},
		}}, true
	case "deadletter":
		return &subcommands{p: p, name: "deadletter", about: deadLetterUsage, subs: map[string]command{
			"list":  &deadLetterListCommand{p},
			"retry": &deadLetterRetryCommand{p},
			"drop":  &deadLetterDropCommand{p},
		}}, true
	case "lease":
		return &subcommands{p: p, name: "lease", about: leaseUsage, subs: map[string]command{
			"show":    &leaseShowCommand{p},
			"release": &leaseReleaseCommand{p},
		}}, true
	case "version":
		return &versionCommand{p}, true
	case "webhook":
		return &subcommands{p: p, name: "webhook", about: webhookUsage, subs: map[string]command{
			"verify": &webhookVerifyCommand{p},
		}}, true
	}
	return nil, false
}

// subcommands is a command made of subcommands: "syncjob deadletter retry".
type subcommands struct {
	p     *program
	name  string
	about string // its --help: the subcommands and what they do
	subs  map[string]command
}

func (s *subcommands) Run(ctx context.Context, args []string) error {
	names := slices.Sorted(maps.Keys(s.subs))
	switch {
	case len(args) == 0:
		return usageError(s.name, "needs one of: "+strings.Join(names, ", "))
	case args[0] == "-h" || args[0] == "--help" || args[0] == "help":
		fmt.Fprint(s.p.stderr, s.about)
		return flag.ErrHelp
	}
	cmd, ok := s.subs[args[0]]
	if !ok {
		return usageError(s.name, fmt.Sprintf("unknown subcommand %q (one of: %s)", args[0], strings.Join(names, ", ")))
	}
	return cmd.Run(ctx, args[1:])
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

// exitCode maps the outcome of a command to its exit code (README.md, "Operate").
func exitCode(err error) int {
	var ee *exitError
	var ce *policy.ConfigError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ce), errors.Is(err, policy.ErrConfig):
		return exitUsage
	case errors.Is(err, differ.ErrRefused):
		return exitRefused
	case errors.Is(err, syncer.ErrPartial):
		return exitPartial
	default:
		return exitFailed
	}
}

// colours returns the report.Palette for w: on when w is a terminal and NO_COLOR is
// not set.
func (p *program) colours(w io.Writer) report.Palette {
	return report.Palette{On: p.isTerminal(w) && p.getenv("NO_COLOR") == ""}
}
