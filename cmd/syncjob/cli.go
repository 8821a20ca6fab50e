package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/knue/syncjob/internal/github"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare"
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

Commands:
  sync        read the branch head and bring the registry up to date
  list        print the registry's policies
  status      last run, time since the last success, queue depth, dead letters, recent runs
  queue       list the queue entries (retries waiting, work for the re-indexer)
  deadletter  list the entries given up after 3 failures; retry one (back to the
              queue for the next run) or drop it (asks first on a terminal)

Exit codes: 0 ok (also nothing to do), 1 failed, 2 usage or configuration error,
3 partial (failures recorded for retry), 4 refused by a safety guard.

Run "syncjob COMMAND --help" for every setting, its environment variable and its default.
`

// leaseTTL bounds how long a crashed run keeps others out of Workers KV: the
// Lambda's timeout (300 s) and a minute. A run of 10,000 policies takes
// about 400 requests, well inside it.
const leaseTTL = 6 * time.Minute

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

func runWith(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer, d deps) int {
	if d.now == nil {
		d.now = time.Now
	}
	if d.isTerminal == nil {
		d.isTerminal = isTerminal
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmd, rest := args[0], args[1:]
	var sub, name string // "deadletter retry NAME"
	if cmd == "queue" || cmd == "deadletter" {
		var ok bool
		if sub, name, rest, ok = operatorArgs(cmd, rest); !ok {
			fmt.Fprintf(stderr, "syncjob: %s needs one of: %s\n\n%s", cmd, operatorSubs[cmd], usage)
			return exitUsage
		}
	}
	fs := flag.NewFlagSet(strings.TrimSpace("syncjob "+cmd+" "+sub), flag.ContinueOnError)
	fs.SetOutput(stderr)
	var full, dryRun, asJSON, allowMassDelete, yes bool
	var runs int
	switch cmd {
	case "sync":
		fs.BoolVar(&full, "full", false, "compare the whole head tree with the registry, not only the changes since the last commit")
		fs.BoolVar(&allowMassDelete, "allow-mass-delete", getenv("ALLOW_MASS_DELETE") == "true",
			"let through a plan that empties the registry or deletes more than 10 policies and 20% of it (env ALLOW_MASS_DELETE=true)")
		fs.BoolVar(&dryRun, "dry-run", false, "print the plan and write nothing")
		fs.BoolVar(&asJSON, "json", false, "print the plan and the run summary as JSON")
	case "list":
		fs.BoolVar(&asJSON, "json", false, "print JSON")
	case "status":
		fs.BoolVar(&asJSON, "json", false, "print JSON")
		fs.IntVar(&runs, "runs", 10, "how many recent runs to show")
	case "queue", "deadletter":
		fs.BoolVar(&asJSON, "json", false, "print JSON")
		if sub == "drop" {
			fs.BoolVar(&yes, "yes", false, "drop without asking")
		}
	default:
		fmt.Fprintf(stderr, "syncjob: unknown command %q\n\n%s", cmd, usage)
		return exitUsage
	}
	load := bindConfig(fs, getenv)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: syncjob %s [flags]\n\nEvery setting is a flag and an environment variable; the flag wins.\n\n", cmd)
		fs.PrintDefaults()
	}
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "syncjob %s: unexpected argument %q\n", cmd, fs.Arg(0))
		return exitUsage
	}
	cfg, err := load()
	if err == nil && cmd == "sync" {
		err = cfg.ValidateSource()
	}
	if err != nil {
		fmt.Fprintln(stderr, "syncjob:", err)
		return exitUsage
	}
	logger := newLogger(cfg, stderr, d.isTerminal(stderr))

	reg, closeReg, err := openRegistryWith(cfg, d, logger)
	if err != nil {
		logger.Error("registry unavailable", syncer.KeyError, err)
		fmt.Fprintln(stderr, "syncjob:", redact(err.Error(), cfg.secrets()))
		return exitUsage
	}
	defer closeReg()

	o := operator{reg: reg, now: d.now, stdout: stdout, stderr: stderr, asJSON: asJSON}
	switch cmd {
	case "list":
		return listPolicies(ctx, reg, asJSON, stdout, stderr)
	case "status":
		return o.status(ctx, runs)
	case "queue":
		return o.queueList(ctx)
	case "deadletter":
		switch sub {
		case "list":
			return o.deadLetterList(ctx)
		case "retry":
			return o.deadLetterRetry(ctx, name)
		default:
			confirm := yes || d.stdin == nil || !d.stdinTerminal
			return o.deadLetterDrop(ctx, name, confirm, d.stdin)
		}
	default:
		return syncOnce(ctx, cfg, d, reg, logger, syncer.Options{Full: full, DryRun: dryRun, Trigger: "cli", AllowMassDelete: allowMassDelete}, asJSON, stdout, stderr)
	}
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

func syncOnce(ctx context.Context, cfg Config, d deps, reg *registry.Registry, logger *slog.Logger, opt syncer.Options, asJSON bool, stdout, stderr io.Writer) int {
	var prog func(done, total int)
	if d.isTerminal(stderr) && !asJSON {
		prog = progress(stderr)
	}
	s, err := newSyncer(cfg, d, reg, logger, prog)
	if err != nil {
		fmt.Fprintln(stderr, "syncjob:", redact(err.Error(), cfg.secrets()))
		return exitUsage
	}
	res, runErr := s.Run(ctx, cfg.syncOptions(opt))
	if asJSON {
		out := struct {
			Summary policy.RunSummary `json:"summary"`
			Plan    policy.Plan       `json:"plan"`
		}{redactSummary(res.Summary, cfg.secrets()), res.Plan}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		_ = enc.Encode(out)
	} else {
		printPlan(stdout, res, opt.DryRun)
	}
	if runErr != nil {
		fmt.Fprintln(stderr, "syncjob: sync:", redact(runErr.Error(), cfg.secrets()))
	}
	return exitCode(runErr)
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

// exitCode maps the outcome of a run to DESIGN.md's exit codes.
func exitCode(err error) int {
	var ce *ConfigError
	switch {
	case err == nil:
		return exitOK
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

func printPlan(w io.Writer, res syncer.Result, dry bool) {
	s := res.Summary
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(res.Plan.Items) > 0 {
		fmt.Fprintln(tw, "ACTION\tPOLICY\tPATH\tTITLE")
		for _, it := range res.Plan.Items {
			path := it.Path
			if it.OldPath != "" && it.OldPath != it.Path {
				path = it.OldPath + " -> " + it.Path
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", it.Action, it.PolicyName, path, it.Title)
		}
	}
	for _, sk := range res.Plan.Skipped {
		fmt.Fprintf(tw, "skip\t%s\t%s\t(%s)\n", sk.PolicyName, sk.Path, sk.Reason)
	}
	for _, c := range res.Plan.Conflicts {
		fmt.Fprintf(tw, "conflict\t%s\t%s\t(wins over %s)\n", c.PolicyName, c.Winner, strings.Join(c.Losers, ", "))
	}
	_ = tw.Flush()
	api, reqs := "registry", s.Requests["registry"]
	if n, ok := s.Requests["cloudflare"]; ok {
		api, reqs = "cloudflare", n
	}
	verb := "synced"
	if dry {
		verb = "dry run, nothing written:"
	}
	fmt.Fprintf(w, "%s %s: %s mode, %d added, %d updated, %d moved, %d deleted, %d unchanged, %d skipped, %d failed (github %d requests, %s %d)\n",
		verb, short(s.CommitSHA), orDash(s.Mode), s.Added, s.Updated, s.Moved, s.Deleted, s.Unchanged, len(s.Skipped), s.ErrorCount,
		s.Requests["github"], api, reqs)
}

func listPolicies(ctx context.Context, reg *registry.Registry, asJSON bool, stdout, stderr io.Writer) int {
	entries, problems, err := reg.Policies(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "syncjob: list:", err)
		return exitFailed
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	slices.Sort(names)
	if asJSON {
		list := make([]policy.Entry, 0, len(names))
		for _, n := range names {
			list = append(list, entries[n])
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		_ = enc.Encode(list)
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "POLICY\tTITLE\tPATH\tSHA\tUPDATED")
		for _, n := range names {
			e := entries[n]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.PolicyName, e.Title, e.Path, short(e.SHA), e.LastUpdated)
		}
		_ = tw.Flush()
		fmt.Fprintf(stdout, "%d policies\n", len(names))
	}
	for key, perr := range problems {
		fmt.Fprintf(stderr, "syncjob: list: %s unreadable: %v\n", key, perr)
	}
	return exitOK
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminalFile(f)
}

func isTerminalFile(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// progress returns a callback that keeps one updating line on a terminal.
func progress(w io.Writer) func(done, total int) {
	return func(done, total int) {
		fmt.Fprintf(w, "\rreading policies %d/%d", done, total)
		if done >= total {
			fmt.Fprint(w, "\n")
		}
	}
}
