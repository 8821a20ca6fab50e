package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/knue/syncjob/internal/emf"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/syncer"
)

// Inside Lambda (AWS_LAMBDA_RUNTIME_API set) the binary serves lambdaHandler
// instead of the CLI. Its configuration is the CLI's environment, plus the
// secret references below.

const (
	// lambdaReserve is the time kept back from the Lambda deadline: the run
	// stops this long before it, leaving the syncer's metadata writes (which
	// get their own 10 s) and the metrics line time to happen.
	lambdaReserve = 15 * time.Second

	// metricsNamespace is the CloudWatch namespace of the EMF line; the alarms
	// of infra/template.yaml read it.
	metricsNamespace = "syncjob"

	// secretsExtensionPort is the default port of the AWS Parameters and
	// Secrets Lambda Extension; PARAMETERS_SECRETS_EXTENSION_HTTP_PORT (the
	// extension's own setting) changes it.
	secretsExtensionPort = "2773"
)

// Log keys the handler adds to every line of an invocation.
const (
	keyTrigger   = "trigger"
	keyRequestID = "awsRequestId"
	keyDryRun    = "dryRun"
)

// secretRef is a secret setting that Lambda may instead name by the ARN (or
// name) of an AWS Secrets Manager secret, read at each invocation through the
// Parameters and Secrets extension, so the value never passes through
// CloudFormation, the function's configuration or a log.
type secretRef struct {
	env string // the setting, e.g. GITHUB_TOKEN
	ref string // the variable naming its secret, e.g. GITHUB_TOKEN_SECRET_ARN
}

func secretRefs() []secretRef {
	return []secretRef{
		{env: "GITHUB_TOKEN", ref: "GITHUB_TOKEN_SECRET_ARN"},
		{env: "CLOUDFLARE_API_TOKEN", ref: "CLOUDFLARE_API_TOKEN_SECRET_ARN"},
	}
}

// serveLambda runs the Lambda runtime loop; it does not return.
func serveLambda() {
	h := newLambdaHandler(os.Getenv, os.Stderr, deps{})
	lambda.Start(h.Handle)
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

// lambdaEvent is an invocation's payload: {"trigger":"schedule"} from the
// scheduler, e.g. {"mode":"full","dryRun":true} by hand.
type lambdaEvent struct {
	Trigger string `json:"trigger"`
	Mode    string `json:"mode"`
	DryRun  bool   `json:"dryRun"`
	// AllowMassDelete lets a backfill through the mass-delete guard, as
	// --allow-mass-delete does; the scheduled event never sets it.
	AllowMassDelete bool `json:"allowMassDelete"`
}

// Event values.
const (
	triggerSchedule = "schedule"
	triggerManual   = "manual"
	eventModeFull   = "full"
	eventModeIncr   = "incremental"
)

// EventError names what is wrong with an invocation's payload.
type EventError struct {
	Field   string // empty when the payload as a whole is wrong
	Problem string
}

func (e *EventError) Error() string {
	if e.Field == "" {
		return "event: " + e.Problem
	}
	return "event: " + e.Field + ": " + e.Problem
}

const acceptedEvent = `accepted: {"trigger":"schedule"|"manual", "mode":"full"|"incremental", "dryRun":true|false, "allowMassDelete":true|false}`

// parseEvent reads a payload strictly: an unknown field, a value of the wrong
// type or outside its set is an *EventError. An empty payload or {} is a
// manual incremental run.
func parseEvent(payload []byte) (syncer.Options, error) {
	var ev lambdaEvent
	if p := bytes.TrimSpace(payload); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(p))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ev); err != nil {
			return syncer.Options{}, eventDecodeError(err)
		}
		if dec.More() {
			return syncer.Options{}, &EventError{Problem: "more than one JSON value; " + acceptedEvent}
		}
		// encoding/json matches names regardless of case ("Mode" fills
		// Mode); an operator's typo should not pass silently.
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(p, &fields); err != nil {
			return syncer.Options{}, eventDecodeError(err)
		}
		for name := range fields {
			switch name {
			case "trigger", "mode", "dryRun", "allowMassDelete":
			default:
				return syncer.Options{}, &EventError{name, "unknown field (names are case-sensitive); " + acceptedEvent}
			}
		}
	}
	opt := syncer.Options{DryRun: ev.DryRun, AllowMassDelete: ev.AllowMassDelete}
	switch ev.Trigger {
	case "", triggerManual:
		opt.Trigger = triggerManual
	case triggerSchedule:
		opt.Trigger = triggerSchedule
	default:
		return opt, &EventError{"trigger", fmt.Sprintf("%q is not schedule or manual", ev.Trigger)}
	}
	switch ev.Mode {
	case "", eventModeIncr:
		// The syncer still runs full when it must (first run, reconcile
		// interval, untrusted compare).
	case eventModeFull:
		opt.Full = true
	default:
		return opt, &EventError{"mode", fmt.Sprintf("%q is not full or incremental", ev.Mode)}
	}
	return opt, nil
}

func eventDecodeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		want := "a string"
		if typeErr.Field == "dryRun" || typeErr.Field == "allowMassDelete" {
			want = "true or false"
		}
		return &EventError{typeErr.Field, fmt.Sprintf("want %s, got a JSON %s", want, typeErr.Value)}
	case errors.As(err, &typeErr):
		return &EventError{Problem: fmt.Sprintf("want a JSON object, got a JSON %s; %s", typeErr.Value, acceptedEvent)}
	case errors.As(err, &syntaxErr):
		return &EventError{Problem: fmt.Sprintf("not JSON (offset %d): %v", syntaxErr.Offset, syntaxErr)}
	}
	// encoding/json reports an unknown field as `json: unknown field "x"`.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return &EventError{strings.Trim(name, `"`), "unknown field; " + acceptedEvent}
	}
	return &EventError{Problem: err.Error()}
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

	cfg, err := h.loadConfig(ctx)
	if err != nil {
		// Without a valid configuration there is no configured logger; the
		// error names settings, never their values.
		slog.New(slog.NewJSONHandler(h.logs, nil)).Error("invocation rejected", keyRequestID, requestID, syncer.KeyError, err)
		return lambdaResult{}, err
	}
	logger := newLogger(cfg, h.logs, false).With(keyRequestID, requestID)

	opt, err := parseEvent(payload)
	if err != nil {
		logger.Error("invocation rejected", syncer.KeyError, err)
		return lambdaResult{}, err
	}
	syncLogger := logger // the syncer adds the trigger to its own lines
	logger = logger.With(keyTrigger, opt.Trigger)
	runCtx, cancel := h.runContext(ctx)
	defer cancel()
	deadline, hasDeadline := runCtx.Deadline()
	logger.Info("invocation started", "full", opt.Full, keyDryRun, opt.DryRun, "runDeadline", deadlineString(deadline, hasDeadline))

	reg, closeReg, err := openRegistryWith(cfg, h.deps, logger)
	if err != nil {
		logger.Error("registry unavailable", syncer.KeyError, err)
		return lambdaResult{}, errors.New(redact(err.Error(), cfg.secrets()))
	}
	defer closeReg()
	s, err := newSyncer(cfg, h.deps, reg, syncLogger, nil)
	if err != nil {
		logger.Error("github source unavailable", syncer.KeyError, err)
		return lambdaResult{}, errors.New(redact(err.Error(), cfg.secrets()))
	}
	setupMs := h.deps.now().Sub(start).Milliseconds()

	opt = cfg.syncOptions(opt)
	if requestID != "" {
		// Lambda retries an invocation with the same request id: the retry
		// takes over the lease a crashed try left.
		opt.LeaseOwner = "lambda " + requestID
	}
	res, runErr := s.Run(runCtx, opt)
	sum := redactSummary(res.Summary, cfg.secrets())
	out := lambdaResult{RunSummary: sum}
	if opt.DryRun {
		plan := redactPlan(res.Plan, cfg.secrets())
		out.Plan = &plan
		logger.Info("dry-run plan", syncer.KeyRunID, sum.RunID, "items", plan.Items, "skipped", plan.Skipped, "conflicts", plan.Conflicts)
	} else {
		h.writeMetrics(logger, cfg, sum, requestID)
	}

	var outErr error
	if sum.Status == policy.RunFailed {
		msg := sum.Error
		if runErr != nil {
			msg = redact(runErr.Error(), cfg.secrets())
		}
		if runCtx.Err() != nil && ctx.Err() == nil {
			msg += fmt.Sprintf(" (stopped %s before the Lambda deadline to record the run; the next run continues)", h.reserve)
		}
		outErr = &RunError{RunID: sum.RunID, Status: sum.Status, Message: msg}
	}
	level := slog.LevelInfo
	if outErr != nil {
		level = slog.LevelError
	}
	logger.Log(ctx, level, "invocation finished",
		syncer.KeyRunID, sum.RunID,
		syncer.KeyStatus, sum.Status,
		"setupMs", setupMs,
		"totalMs", h.deps.now().Sub(start).Milliseconds(),
		"remainingMs", remainingMs(ctx),
	)
	if outErr != nil {
		return lambdaResult{}, outErr
	}
	return out, nil
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
	getenv, err := h.resolveSecrets(ctx)
	if err != nil {
		return Config{}, err
	}
	fs := flag.NewFlagSet("syncjob lambda", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	load := bindConfig(fs, getenv)
	if err := fs.Parse(nil); err != nil {
		return Config{}, err
	}
	cfg, err := load()
	if err == nil {
		err = cfg.ValidateSource()
	}
	return cfg, err
}

// resolveSecrets returns the environment with every secret reference replaced
// by its value.
func (h *lambdaHandler) resolveSecrets(ctx context.Context) (env, error) {
	resolved := map[string]string{}
	for _, s := range secretRefs() {
		id := strings.TrimSpace(h.getenv(s.ref))
		if id == "" {
			continue
		}
		if h.getenv(s.env) != "" {
			return nil, &ConfigError{s.ref, "set " + s.env + " or " + s.ref + ", not both"}
		}
		v, err := h.secretValue(ctx, id)
		if err != nil {
			return nil, &ConfigError{s.ref, err.Error()}
		}
		resolved[s.env] = v
	}
	return func(k string) string {
		if v, ok := resolved[k]; ok {
			return v
		}
		return h.getenv(k)
	}, nil
}

// secretValue reads a Secrets Manager secret string through the Parameters
// and Secrets extension, which caches it (300 s by default) and signs the
// AWS request itself: no SDK in this binary.
func (h *lambdaHandler) secretValue(ctx context.Context, id string) (string, error) {
	u := h.extensionURL + "/secretsmanager/get?secretId=" + url.QueryEscape(id)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", fmt.Errorf("secrets extension: get %s: %w", id, err)
	}
	req.Header.Set("X-Aws-Parameters-Secrets-Token", h.getenv("AWS_SESSION_TOKEN"))
	resp, err := h.httpClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("secrets extension: get %s: %w (is the AWS Parameters and Secrets Lambda Extension layer attached?)", id, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("secrets extension: get %s: %w", id, err)
	}
	if resp.StatusCode != http.StatusOK {
		// An error answer carries the AWS error (e.g. AccessDeniedException),
		// never the secret.
		msg := strings.TrimSpace(string(body))
		if len(msg) > 300 {
			msg = msg[:300]
		}
		return "", fmt.Errorf("secrets extension: get %s: status %d: %s", id, resp.StatusCode, msg)
	}
	var out struct {
		SecretString *string `json:"SecretString"`
	}
	// The body holds the secret: an error here must not quote it.
	if json.Unmarshal(body, &out) != nil {
		return "", fmt.Errorf("secrets extension: get %s: answer is not the expected JSON", id)
	}
	if out.SecretString == nil || strings.TrimSpace(*out.SecretString) == "" {
		return "", fmt.Errorf("secrets extension: get %s: the secret has no SecretString (store the token as plain text)", id)
	}
	return strings.TrimSpace(*out.SecretString), nil
}

// redactSummary removes secrets from the free-text fields of a summary.
func redactSummary(s policy.RunSummary, secrets []string) policy.RunSummary {
	s.Error = redact(s.Error, secrets)
	if len(s.Failures) > 0 {
		f := make([]policy.Failure, len(s.Failures))
		for i, x := range s.Failures {
			f[i] = policy.Failure{PolicyName: x.PolicyName, Error: redact(x.Error, secrets)}
		}
		s.Failures = f
	}
	s.ModeReason = redact(s.ModeReason, secrets)
	return s
}

// redactPlan removes secrets from the text of a plan: names, paths, titles
// (read from the files) and reasons. The slices are copied; nil stays nil.
func redactPlan(p policy.Plan, secrets []string) policy.Plan {
	out := policy.Plan{Unchanged: p.Unchanged}
	if p.Items != nil {
		out.Items = make([]policy.Item, len(p.Items))
		for i, it := range p.Items {
			it.PolicyName = redact(it.PolicyName, secrets)
			it.Path = redact(it.Path, secrets)
			it.OldPath = redact(it.OldPath, secrets)
			it.Title = redact(it.Title, secrets)
			out.Items[i] = it
		}
	}
	if p.Skipped != nil {
		out.Skipped = make([]policy.Skip, len(p.Skipped))
		for i, sk := range p.Skipped {
			out.Skipped[i] = policy.Skip{PolicyName: redact(sk.PolicyName, secrets), Path: redact(sk.Path, secrets), Reason: redact(sk.Reason, secrets)}
		}
	}
	if p.Conflicts != nil {
		out.Conflicts = make([]policy.Conflict, len(p.Conflicts))
		for i, c := range p.Conflicts {
			losers := make([]string, len(c.Losers))
			for j, l := range c.Losers {
				losers[j] = redact(l, secrets)
			}
			out.Conflicts[i] = policy.Conflict{PolicyName: redact(c.PolicyName, secrets), Winner: redact(c.Winner, secrets), Losers: losers}
		}
	}
	return out
}

// runMetrics is the EMF line of one run: its counts, its duration and one
// RunSucceeded/RunFailed/RunPartial count, so that alarms need neither an SDK
// nor a metric filter.
func runMetrics(repo, branch string, s policy.RunSummary, requestID string, at time.Time) emf.Line {
	one := func(status string) float64 {
		if s.Status == status {
			return 1
		}
		return 0
	}
	c := func(name string, v int) emf.Metric { return emf.Metric{Name: name, Unit: emf.Count, Value: float64(v)} }
	line := emf.Line{
		Namespace:  metricsNamespace,
		Dimensions: map[string]string{"Repo": repo},
		Metrics: []emf.Metric{
			c("Added", s.Added),
			c("Updated", s.Updated),
			c("Moved", s.Moved),
			c("Deleted", s.Deleted),
			c("Unchanged", s.Unchanged),
			c("Skipped", len(s.Skipped)),
			c("Conflicts", len(s.Conflicts)),
			c("Failed", s.ErrorCount),
			c("GitHubRequests", int(s.Requests["github"])),
			c("RegistryRequests", int(s.Requests["registry"]+s.Requests["cloudflare"])),
			c("CloudflareRequests", int(s.Requests["cloudflare"])),
			c("BillableWrites", int(s.BillableWrites)),
			c("BillableDeletes", int(s.BillableDeletes)),
			{Name: "DurationMs", Unit: emf.Milliseconds, Value: float64(s.DurationMs)},
			{Name: "RunSucceeded", Unit: emf.Count, Value: one(policy.RunSuccess)},
			{Name: "RunFailed", Unit: emf.Count, Value: one(policy.RunFailed)},
			{Name: "RunPartial", Unit: emf.Count, Value: one(policy.RunPartial)},
		},
		Properties: map[string]any{
			"msg":              "run metrics",
			syncer.KeyRunID:    s.RunID,
			keyTrigger:         s.Trigger,
			keyRequestID:       requestID,
			syncer.KeyStatus:   s.Status,
			syncer.KeyMode:     s.Mode,
			syncer.KeyBranch:   branch,
			syncer.KeyCommit:   s.CommitSHA,
			syncer.KeyPrevious: s.PreviousCommitSHA,
			"timestamp":        s.Timestamp,
		},
		Time: at,
	}
	for _, phase := range slices.Sorted(maps.Keys(s.PhasesMs)) { // PhaseReadMs, PhasePlanMs, ...
		name := "Phase" + strings.ToUpper(phase[:1]) + phase[1:] + "Ms"
		line.Metrics = append(line.Metrics, emf.Metric{Name: name, Unit: emf.Milliseconds, Value: float64(s.PhasesMs[phase])})
	}
	return line
}

// writeMetrics prints the run's EMF line as one raw line: Lambda forwards it
// to CloudWatch Logs, which extracts the metrics.
func (h *lambdaHandler) writeMetrics(logger *slog.Logger, cfg Config, s policy.RunSummary, requestID string) {
	line := runMetrics(cfg.Repo, cfg.Branch, s, requestID, h.deps.now())
	b, err := line.Marshal()
	if err != nil {
		logger.Error("metrics not written", syncer.KeyError, err)
		return
	}
	b = []byte(redact(string(b), cfg.secrets()))
	if _, err := h.logs.Write(append(b, '\n')); err != nil {
		logger.Error("metrics not written", syncer.KeyError, err)
	}
}
