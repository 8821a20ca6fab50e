package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/redact"
	"github.com/knue/syncjob/internal/syncer"
)

// Inside Lambda (AWS_LAMBDA_RUNTIME_API set) the binary serves lambdaHandler
// instead of the CLI. Its configuration is the CLI's environment, plus the
// secret references of secrets.go; its event is event.go's.

// lambdaReserve is the time kept back from the Lambda deadline: the run stops
// this long before it, leaving the syncer's metadata writes (which get their
// own 10 s) and the metrics line time to happen.
const lambdaReserve = 15 * time.Second

// serveLambda runs the Lambda runtime loop; it does not return.
func serveLambda() {
	lambda.Start(newLambdaEntry(os.Getenv, os.Stderr, deps{})) // raw bytes: lambda_entry.go
}

// lambdaHandler serves invocations. It keeps no state between them: a warm
// environment reuses it.
type lambdaHandler struct {
	getenv  env
	logs    io.Writer // log lines and the EMF line (Lambda sends both streams to CloudWatch)
	deps    deps
	reserve time.Duration
	// extensionURL is the base URL of the secrets extension.
	extensionURL string
	httpClient   *http.Client
}

func newLambdaHandler(getenv env, logs io.Writer, d deps) *lambdaHandler {
	if d.now == nil {
		d.now = time.Now
	}
	if d.isTerminal == nil {
		d.isTerminal = func(io.Writer) bool { return false }
	}
	port := getenv("PARAMETERS_SECRETS_EXTENSION_HTTP_PORT")
	if port == "" {
		port = secretsExtensionPort
	}
	return &lambdaHandler{
		getenv:       getenv,
		logs:         logs,
		deps:         d,
		reserve:      lambdaReserve,
		extensionURL: "http://localhost:" + port,
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

// lambdaResult is what an invocation returns: the run summary, its fields at
// the top level, and for a dry run the plan (what a run would write, the
// files skipped and the name conflicts), as the CLI prints it.
type lambdaResult struct {
	policy.RunSummary
	Plan *policy.Plan `json:"plan,omitempty"`
}

// Handle serves one invocation: it reads the configuration and the event,
// runs the sync within the Lambda deadline less the reserve, writes the
// metrics line and returns the run summary (with the plan on a dry run). A
// run whose status is failed is an error; a partial run is not (its failed
// items are queued for the next run, an immediate retry would not help them,
// and the RunPartial alarm reports it).
func (h *lambdaHandler) Handle(ctx context.Context, payload json.RawMessage) (lambdaResult, error) {
	start := h.deps.now()
	requestID := ""
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		requestID = lc.AwsRequestID
	}
	cfg, syncLogger, opt, err := h.prepare(ctx, payload, requestID)
	if err != nil {
		return lambdaResult{}, err
	}
	logger := syncLogger.With(logkey.Trigger, opt.Trigger) // the syncer adds the trigger to its own lines
	if opt.Delivery != "" {
		logger = logger.With(logkey.Delivery, opt.Delivery) // and the delivery
	}
	runCtx, cancel := h.runContext(ctx)
	defer cancel()
	deadline, hasDeadline := runCtx.Deadline()
	logger.Info("invocation started", logkey.Full, opt.Full, logkey.DryRun, opt.DryRun, logkey.RunDeadline, deadlineString(deadline, hasDeadline))

	s, closeReg, err := h.build(cfg, opt.DryRun, logger, syncLogger)
	if err != nil {
		return lambdaResult{}, err
	}
	defer closeReg()
	setupMs := h.deps.now().Sub(start).Milliseconds()

	opt = cfg.syncOptions(opt)
	if requestID != "" {
		// Lambda retries an invocation with the same request id: the retry
		// takes over the lease a crashed try left.
		opt.LeaseOwner = "lambda " + requestID
	}
	res, runErr := s.Run(runCtx, opt)
	out, outErr := h.outcome(logger, cfg, res, runErr, requestID)
	if outErr != nil && runCtx.Err() != nil && ctx.Err() == nil {
		outErr.Message += fmt.Sprintf(" (stopped %s before the Lambda deadline to record the run; the next run continues)", h.reserve)
	}
	level := slog.LevelInfo
	if outErr != nil {
		level = slog.LevelError
	}
	logger.Log(ctx, level, "invocation finished",
		logkey.RunID, out.RunID,
		logkey.Status, out.Status,
		logkey.SetupMs, setupMs,
		logkey.TotalMs, h.deps.now().Sub(start).Milliseconds(),
		logkey.RemainingMs, remainingMs(ctx),
	)
	if outErr != nil {
		return lambdaResult{}, outErr
	}
	return out, nil
}

// build opens the registry (read-only for a dry run) and the GitHub source
// of one run; a failure is logged and returned without secrets.
func (h *lambdaHandler) build(cfg Config, dry bool, logger, syncLogger *slog.Logger) (*syncer.Syncer, func(), error) {
	a := syncAccess
	if dry {
		a = planAccess
	}
	reg, closeReg, err := openRegistry(cfg, h.deps, logger, a)
	if err != nil {
		logger.Error("registry unavailable", logkey.Error, err)
		return nil, nil, errors.New(redact.String(err.Error(), cfg.secrets()...))
	}
	s, err := newSyncer(cfg, h.deps, reg, syncLogger, nil)
	if err != nil {
		closeReg()
		logger.Error("github source unavailable", logkey.Error, err)
		return nil, nil, errors.New(redact.String(err.Error(), cfg.secrets()...))
	}
	return s, closeReg, nil
}

// prepare reads the configuration (secrets resolved) and the event. The
// logger it returns carries the request id; a rejection is logged.
func (h *lambdaHandler) prepare(ctx context.Context, payload []byte, requestID string) (Config, *slog.Logger, syncer.Options, error) {
	cfg, err := h.loadConfig(ctx)
	if err != nil {
		// Without a valid configuration there is no configured logger; the
		// error names settings, never their values.
		slog.New(slog.NewJSONHandler(h.logs, nil)).Error("invocation rejected", logkey.RequestID, requestID, logkey.Error, err)
		return cfg, nil, syncer.Options{}, err
	}
	logger := newLogger(cfg, h.logs, false).With(logkey.RequestID, requestID)
	opt, err := parseEvent(payload)
	if err != nil {
		logger.Error("invocation rejected", logkey.Error, err)
		return cfg, nil, opt, err
	}
	return cfg, logger, opt, nil
}

// outcome is what the invocation returns for a run: the redacted summary
// (and plan, logged too, on a dry run), and a *RunError when the run
// failed. A run that writes also writes its metrics line.
func (h *lambdaHandler) outcome(logger *slog.Logger, cfg Config, res syncer.Result, runErr error, requestID string) (lambdaResult, *RunError) {
	sum := redactSummary(res.Summary, cfg.secrets())
	out := lambdaResult{RunSummary: sum}
	if sum.DryRun {
		plan := redactPlan(res.Plan, cfg.secrets())
		out.Plan = &plan
		logger.Info("dry-run plan", logkey.RunID, sum.RunID, logkey.Items, plan.Items, logkey.Skipped, plan.Skipped, logkey.Conflicts, plan.Conflicts)
	} else {
		h.writeMetrics(logger, cfg, sum, requestID)
	}
	if sum.Status != policy.RunFailed {
		return out, nil
	}
	msg := sum.Error
	if runErr != nil {
		msg = redact.String(runErr.Error(), cfg.secrets()...)
	}
	return out, &RunError{RunID: sum.RunID, Status: sum.Status, Message: msg}
}

// runContext bounds the run by the Lambda deadline less the reserve. A
// deadline already closer than the reserve gives an expired context: the run
// then fails at once and is still recorded.
func (h *lambdaHandler) runContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(ctx, d.Add(-h.reserve))
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
func (h *lambdaHandler) loadConfig(ctx context.Context) (Config, error) {
	ext := secretsExtension{baseURL: h.extensionURL, sessionToken: h.getenv("AWS_SESSION_TOKEN"), client: h.httpClient}
	getenv, err := resolveSecrets(ctx, h.getenv, ext)
	if err != nil {
		return Config{}, err
	}
	fs := flag.NewFlagSet("syncjob lambda", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	load := bindConfig(fs, getenv, groupSource|groupRegistry|groupRun|groupLogging)
	if err := fs.Parse(nil); err != nil {
		return Config{}, err
	}
	cfg, err := load()
	if err == nil {
		err = cfg.ValidateSource()
	}
	return cfg, err
}
