// Package lambda serves syncjob inside AWS Lambda: the sync function's
// handler (its event, its secrets, its metric line) and the webhook
// receiver, a second function from the same artifact that verifies GitHub's
// push deliveries and hands each to the sync function. The command wires the
// configuration in through Configure, so a run is configured as the CLI's.
package lambda

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	awslambda "github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/redact"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/syncer"
)

// Inside Lambda (AWS_LAMBDA_RUNTIME_API set) the binary serves Handler
// instead of the CLI. Its configuration is the CLI's environment, plus the
// secret references of secrets.go; its event is event.go's.

// Reserve is the time kept back from the Lambda deadline: the run stops
// this long before it, leaving the syncer's metadata writes (which get their
// own 10 s) and the metrics line time to happen.
const Reserve = 15 * time.Second

// Job is one invocation's configuration, read by the command from the
// environment (secrets resolved) exactly as the CLI reads a sync's.
type Job struct {
	Repo, Branch string
	Secrets      []string     // values masked in whatever the handler logs or returns
	Logger       *slog.Logger // the configured logger, writing to the handler's logs
	// OpenRegistry opens the registry, read-only for a dry run; the caller
	// closes it with the function returned.
	OpenRegistry func(dryRun bool, logger *slog.Logger) (*registry.Registry, func(), error)
	// NewSyncer builds the GitHub source and the syncer of a run.
	NewSyncer func(reg *registry.Registry, logger *slog.Logger) (*syncer.Syncer, error)
	// Options completes a run's options with the configured settings.
	Options func(syncer.Options) syncer.Options
}

// Configure reads a Job from getenv; its logger writes to logs. An error
// names the setting (a *policy.ConfigError) and never a secret's value.
type Configure func(getenv func(string) string, logs io.Writer) (Job, error)

// Start runs the Lambda runtime loop; it does not return.
func Start(configure Configure) {
	awslambda.Start(NewEntry(os.Getenv, os.Stderr, time.Now, configure)) // raw bytes: entry.go
}

// Handler serves invocations. It keeps no state between them: a warm
// environment reuses it.
type Handler struct {
	getenv    func(string) string
	logs      io.Writer // log lines and the EMF line (Lambda sends both streams to CloudWatch)
	now       func() time.Time
	configure Configure
	// Reserve is kept back from the deadline (the package's Reserve; tests
	// shorten it).
	Reserve time.Duration
	// ExtensionURL is the base URL of the secrets extension.
	ExtensionURL string
	httpClient   *http.Client
}

// NewHandler returns the sync function's handler; now is its clock.
func NewHandler(getenv func(string) string, logs io.Writer, now func() time.Time, configure Configure) *Handler {
	port := getenv("PARAMETERS_SECRETS_EXTENSION_HTTP_PORT")
	if port == "" {
		port = secretsExtensionPort
	}
	return &Handler{
		getenv:       getenv,
		logs:         logs,
		now:          now,
		configure:    configure,
		Reserve:      Reserve,
		ExtensionURL: "http://localhost:" + port,
		httpClient:   &http.Client{Timeout: 10 * time.Second},
	}
}

// RunError is the error of an invocation whose run failed. Lambda reports its
// type name ("RunError") and message, counts it in the Errors metric and
// retries an asynchronous invocation, which is safe: every run recomputes
// what to write from the repository and the registry.
type RunError struct {
	RunID   string
	Status  string
	Message string
}

func (e *RunError) Error() string {
	return fmt.Sprintf("run %s %s: %s", e.RunID, e.Status, e.Message)
}

// Result is what an invocation returns: the run summary, its fields at
// the top level, and for a dry run the plan (what a run would write, the
// files skipped and the name conflicts), as the CLI prints it. Its JSON
// lists at most MaxResultList entries of each list, to fit Lambda's
// response limit (result.go).
type Result struct {
	policy.RunSummary
	Plan *policy.Plan `json:"plan,omitempty"`
	// Truncated says what the JSON leaves out of the lists; set when it
	// is encoded, absent when it lists everything.
	Truncated *Truncation `json:"truncated,omitempty"`
}

// Handle serves one invocation: it reads the configuration and the event,
// runs the sync within the Lambda deadline less the reserve, writes the
// metrics line and returns the run summary (with the plan on a dry run). A
// run whose status is failed is an error; a partial run is not (its failed
// items are queued for the next run, an immediate retry would not help them,
// and the RunPartial alarm reports it).
func (h *Handler) Handle(ctx context.Context, payload json.RawMessage) (Result, error) {
	start := h.now()
	requestID := ""
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		requestID = lc.AwsRequestID
	}
	job, syncLogger, opt, err := h.prepare(ctx, payload, requestID)
	if err != nil {
		return Result{}, err
	}
	logger := syncLogger.With(logkey.Trigger, opt.Trigger) // the syncer adds the trigger to its own lines
	if opt.Delivery != "" {
		logger = logger.With(logkey.Delivery, opt.Delivery) // and the delivery
	}
	runCtx, cancel := h.runContext(ctx)
	defer cancel()
	deadline, hasDeadline := runCtx.Deadline()
	logger.Info("invocation started", logkey.Full, opt.Full, logkey.DryRun, opt.DryRun, logkey.RunDeadline, deadlineString(deadline, hasDeadline))

	s, closeReg, err := h.build(job, opt.DryRun, logger, syncLogger)
	if err != nil {
		return Result{}, err
	}
	defer closeReg()
	setupMs := h.now().Sub(start).Milliseconds()

	opt = job.Options(opt)
	if requestID != "" {
		// Lambda retries an invocation with the same request id: the retry
		// takes over the lease a crashed try left.
		opt.LeaseOwner = "lambda " + requestID
	}
	res, runErr := s.Run(runCtx, opt)
	timedOut := runErr != nil && runCtx.Err() != nil && ctx.Err() == nil
	out, outErr := h.outcome(logger, job, res, runErr, requestID, timedOut)
	if outErr != nil && timedOut {
		outErr.Message = h.timedOut(outErr.Message)
	}
	level := slog.LevelInfo
	if outErr != nil {
		level = slog.LevelError
	}
	logger.Log(ctx, level, "invocation finished",
		logkey.RunID, out.RunID,
		logkey.Status, out.Status,
		logkey.SetupMs, setupMs,
		logkey.TotalMs, h.now().Sub(start).Milliseconds(),
		logkey.RemainingMs, remainingMs(ctx),
		logkey.TimedOut, timedOut,
	)
	if outErr != nil {
		return Result{}, outErr
	}
	return out, nil
}

// build opens the registry (read-only for a dry run) and the GitHub source
// of one run; a failure is logged and returned without secrets.
func (h *Handler) build(job Job, dry bool, logger, syncLogger *slog.Logger) (*syncer.Syncer, func(), error) {
	reg, closeReg, err := job.OpenRegistry(dry, logger)
	if err != nil {
		logger.Error("registry unavailable", logkey.Error, err)
		return nil, nil, errors.New(redact.String(err.Error(), job.Secrets...))
	}
	s, err := job.NewSyncer(reg, syncLogger)
	if err != nil {
		closeReg()
		logger.Error("github source unavailable", logkey.Error, err)
		return nil, nil, errors.New(redact.String(err.Error(), job.Secrets...))
	}
	return s, closeReg, nil
}

// prepare reads the configuration (secrets resolved) and the event. The
// logger it returns carries the request id; a rejection is logged.
func (h *Handler) prepare(ctx context.Context, payload []byte, requestID string) (Job, *slog.Logger, syncer.Options, error) {
	job, err := h.loadConfig(ctx)
	if err != nil {
		// Without a valid configuration there is no configured logger; the
		// error names settings, never their values.
		slog.New(slog.NewJSONHandler(h.logs, nil)).Error("invocation rejected", logkey.RequestID, requestID, logkey.Error, err)
		return job, nil, syncer.Options{}, err
	}
	logger := job.Logger.With(logkey.RequestID, requestID)
	opt, err := ParseEvent(payload)
	if err != nil {
		logger.Error("invocation rejected", logkey.Error, err)
		return job, nil, opt, err
	}
	return job, logger, opt, nil
}

// outcome is what the invocation returns for a run: the redacted summary
// (and plan, logged whole too, on a dry run), and a *RunError when the run
// failed. A run that writes also writes its metrics line.
func (h *Handler) outcome(logger *slog.Logger, job Job, res syncer.Result, runErr error, requestID string, timedOut bool) (Result, *RunError) {
	sum := redact.Summary(res.Summary, job.Secrets)
	out := Result{RunSummary: sum}
	if sum.DryRun {
		plan := redact.Plan(res.Plan, job.Secrets)
		out.Plan = &plan
		logPlan(logger, sum.RunID, plan)
	} else {
		h.writeMetrics(logger, job, sum, requestID, timedOut)
	}
	// A dry run the guard refuses answered its question: a result, not an
	// error (which the errors alarm counts).
	if sum.Status != policy.RunFailed && (sum.Status != policy.RunRefused || sum.DryRun) {
		out.Error = lambdaTerms(out.Error)
		return out, nil
	}
	msg := sum.Error
	if runErr != nil {
		msg = redact.String(runErr.Error(), job.Secrets...)
	}
	return out, &RunError{RunID: sum.RunID, Status: sum.Status, Message: lambdaTerms(msg)}
}

// maxPlanLogBytes bounds the lists one "dry-run plan" line carries:
// CloudWatch Logs takes events of at most 256 KB and Lambda cuts a longer
// line, so a large plan (50,000 items are about 11 MB) takes several lines.
const maxPlanLogBytes = 128 << 10

// logPlan logs a dry run's whole plan, its items, skipped files and
// conflicts, in lines of about maxPlanLogBytes at most (part of parts):
// the result lists only the first of them (MaxResultList).
func logPlan(logger *slog.Logger, runID string, plan policy.Plan) {
	parts := planParts(plan, maxPlanLogBytes)
	for i, p := range parts {
		logger.Info("dry-run plan", logkey.RunID, runID, logkey.Part, i+1, logkey.Parts, len(parts),
			logkey.Items, p.Items, logkey.Skipped, p.Skipped, logkey.Conflicts, p.Conflicts)
	}
}

// planParts cuts a plan's items, skipped files and conflicts, in order,
// into parts whose entries encode to about budget bytes at most (an entry
// larger than budget is a part alone). There is at least one part.
func planParts(plan policy.Plan, budget int) []policy.Plan {
	newPart := func() policy.Plan {
		return policy.Plan{Items: []policy.Item{}, Skipped: []policy.Skip{}, Conflicts: []policy.Conflict{}}
	}
	parts := []policy.Plan{newPart()}
	size := 0
	part := func(entry any) *policy.Plan {
		b, _ := json.Marshal(entry)
		if size > 0 && size+len(b) > budget {
			parts, size = append(parts, newPart()), 0
		}
		size += len(b) + 1
		return &parts[len(parts)-1]
	}
	for _, it := range plan.Items {
		p := part(it)
		p.Items = append(p.Items, it)
	}
	for _, sk := range plan.Skipped {
		p := part(sk)
		p.Skipped = append(p.Skipped, sk)
	}
	for _, c := range plan.Conflicts {
		p := part(c)
		p.Conflicts = append(p.Conflicts, c)
	}
	return parts
}

// cliFlag matches the CLI's way past a refusal in a message (compiled when
// first used, not when the program starts: docs/bench.md, "Round trips").
var cliFlag = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`run with --allow-mass-delete(=\d+)?`) })

// lambdaTerms says a message's way past a refusal in the Lambda's terms:
// the payload's field, not the CLI's flag.
func lambdaTerms(msg string) string {
	msg = cliFlag().ReplaceAllString(msg, `invoke with {"allowMassDelete": true} in the payload`)
	// the function has no way past the rewind check: the CLI does, once
	// (a reviewer: the Lambda's error named a setting it does not read)
	return strings.ReplaceAll(msg, "--allow-rewind or ALLOW_REWIND=yes", "syncjob sync --allow-rewind, run once from the CLI,")
}

// timedOut says, in Lambda's terms and first, that the invocation ran out
// of time, then what the run was doing (cause: most often a Go "context
// deadline exceeded" from the request it was making).
func (h *Handler) timedOut(cause string) string {
	return fmt.Sprintf("timed out: the run stopped %s before the Lambda function's timeout to record itself; "+
		"lastCommit stays, so the next invocation plans the change again from the start "+
		"(if this recurs, raise the function's Timeout, at most 900 s, or run the sync once with the CLI); stopped at: %s", h.Reserve, cause)
}

// runContext bounds the run by the Lambda deadline less the reserve. A
// deadline already closer than the reserve gives an expired context: the run
// then fails at once and is still recorded.
func (h *Handler) runContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(ctx, d.Add(-h.Reserve))
	}
	return context.WithCancel(ctx)
}

func deadlineString(t time.Time, ok bool) string {
	if !ok {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func remainingMs(ctx context.Context) int64 {
	if d, ok := ctx.Deadline(); ok {
		return time.Until(d).Milliseconds()
	}
	return -1
}

// loadConfig reads the configuration exactly as the CLI does (no flags),
// after resolving secret references.
func (h *Handler) loadConfig(ctx context.Context) (Job, error) {
	ext := secretsExtension{baseURL: h.ExtensionURL, sessionToken: h.getenv("AWS_SESSION_TOKEN"), client: h.httpClient}
	getenv, err := resolveSecrets(ctx, h.getenv, ext)
	if err != nil {
		return Job{}, err
	}
	return h.configure(getenv, h.logs)
}
