package lambda

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/knue/syncjob/internal/emf"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/redact"
	"github.com/knue/syncjob/internal/webhook"
)

// The webhook receiver is a second Lambda function from the same artifact,
// behind a Function URL open to the internet (AuthType NONE: the signature
// is the authentication). It answers GitHub at once and hands each push to
// the synced branch to the sync function as an asynchronous invocation:
// Lambda's queue holds it while a run is going (one writer) and retries
// throttles, so a push during a run is synced after it, not dropped.

// The receiver's settings. SYNC_FUNCTION_NAME also tells Entry that
// this function is the receiver.
const (
	EnvSyncFunction     = "SYNC_FUNCTION_NAME"
	EnvWebhookSecret    = "GITHUB_WEBHOOK_SECRET"
	EnvWebhookSecretARN = "GITHUB_WEBHOOK_SECRET_ARN"
)

// HandoffTimeout bounds the handoff: GitHub gives up on a delivery
// after 10 seconds, and Lambda accepts an event in milliseconds.
const HandoffTimeout = 5 * time.Second

// Handoff starts a sync.
type Handoff interface {
	// InvokeAsync queues payload as an asynchronous (Event) invocation of
	// function and returns once Lambda has accepted it; it does not wait
	// for the run.
	InvokeAsync(ctx context.Context, function string, payload []byte) error
}

// WebhookConfig is the receiver's configuration; the secret itself is read
// per delivery, and only for one worth verifying.
type WebhookConfig struct {
	SyncFunction string
	Repo, Branch string
	secretARN    string // GITHUB_WEBHOOK_SECRET_ARN, read through the secrets extension
	secret       string // or GITHUB_WEBHOOK_SECRET, outside Lambda
}

func LoadWebhookConfig(getenv func(string) string) (WebhookConfig, error) {
	c := WebhookConfig{
		SyncFunction: strings.TrimSpace(getenv(EnvSyncFunction)),
		Repo:         strings.TrimSpace(getenv("GITHUB_REPO")),
		Branch:       strings.TrimSpace(getenv("GITHUB_BRANCH")),
		secretARN:    strings.TrimSpace(getenv(EnvWebhookSecretARN)),
		secret:       getenv(EnvWebhookSecret),
	}
	if c.Branch == "" {
		c.Branch = "main"
	}
	switch {
	case c.SyncFunction == "":
		return c, &policy.ConfigError{Setting: EnvSyncFunction, Problem: "required: the name or ARN of the sync function"}
	case c.Repo == "":
		return c, &policy.ConfigError{Setting: "GITHUB_REPO", Problem: "required: the repository whose pushes start a sync, as owner/name"}
	case !policy.IsRepo(c.Repo):
		return c, &policy.ConfigError{Setting: "GITHUB_REPO", Problem: fmt.Sprintf("%s is not owner/name", redact.Quote(c.Repo))}
	case c.secretARN != "" && c.secret != "":
		return c, &policy.ConfigError{Setting: EnvWebhookSecretARN, Problem: "set " + EnvWebhookSecret + " or " + EnvWebhookSecretARN + ", not both"}
	case c.secretARN == "" && strings.TrimSpace(c.secret) == "":
		return c, &policy.ConfigError{Setting: EnvWebhookSecret, Problem: "required: the webhook's secret (in Lambda: " + EnvWebhookSecretARN + ", a Secrets Manager secret)"}
	case c.secretARN == "":
		return c, CheckWebhookSecret(EnvWebhookSecret, c.secret)
	}
	return c, nil
}

// Receiver serves Function URL requests. It keeps no state between
// them.
type Receiver struct {
	getenv       func(string) string
	logs         io.Writer
	now          func() time.Time
	ExtensionURL string // the secrets extension
	httpClient   *http.Client
	handoff      Handoff
	handoffErr   error         // why there is no handoff (the AWS SDK could not be configured)
	Timeout      time.Duration // of the handoff
}

// NewReceiver returns the webhook receiver; h is nil, and herr says why,
// when no AWS Lambda client could be configured.
func NewReceiver(getenv func(string) string, logs io.Writer, now func() time.Time, h Handoff, herr error) *Receiver {
	port := getenv("PARAMETERS_SECRETS_EXTENSION_HTTP_PORT")
	if port == "" {
		port = secretsExtensionPort
	}
	return &Receiver{
		getenv: getenv, logs: logs, now: now,
		ExtensionURL: "http://localhost:" + port,
		httpClient:   &http.Client{Timeout: 5 * time.Second},
		handoff:      h, handoffErr: herr,
		Timeout: HandoffTimeout,
	}
}

// Handle answers one request. Every answer is a response, never an error:
// GitHub shows the status and the body in the webhook's Recent Deliveries.
// Each request writes one "webhook delivery" line and one metrics line.
func (r *Receiver) Handle(ctx context.Context, ev events.LambdaFunctionURLRequest) events.LambdaFunctionURLResponse {
	requestID := ""
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		requestID = lc.AwsRequestID
	}
	var secrets []string // the secret once read: masked wherever it might appear
	logger := slog.New(slog.NewJSONHandler(r.logs, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr { return redact.Attr(a, secrets) },
	})).With(logkey.Component, "webhook", logkey.RequestID, requestID)
	req := webhook.Request{
		Method: ev.RequestContext.HTTP.Method, Headers: ev.Headers,
		Body: ev.Body, IsBase64Encoded: ev.IsBase64Encoded,
	}

	cfg, err := LoadWebhookConfig(r.getenv)
	var o webhook.Outcome
	if err != nil {
		o = webhook.Outcome{
			Kind: webhook.Failed, Status: http.StatusInternalServerError, Reason: "receiver misconfigured", Err: err,
			Event: webhook.Unverified(req.Header(webhook.HeaderEvent)), Delivery: webhook.Unverified(req.Header(webhook.HeaderDelivery)),
		}
	} else {
		o = webhook.Receive(req, func() ([]byte, error) {
			s, err := r.secret(ctx, cfg)
			if s != "" {
				secrets = []string{s}
			}
			return []byte(s), err
		}, webhook.Target{Repo: cfg.Repo, Branch: cfg.Branch})
	}
	if o.Kind == webhook.Sync {
		o = r.handOff(ctx, cfg, o)
	}

	attrs := []any{
		logkey.Outcome, string(o.Kind), logkey.StatusCode, o.Status, logkey.Reason, o.Reason,
		logkey.Delivery, o.Delivery, logkey.Event, o.Event,
		logkey.SourceIP, ev.RequestContext.HTTP.SourceIP, logkey.UserAgent, webhook.Unverified(ev.RequestContext.HTTP.UserAgent),
	}
	if o.Push != nil {
		attrs = append(attrs, logkey.Repo, o.Push.Repo, logkey.Ref, o.Push.Ref, logkey.After, o.Push.After)
	}
	if o.Kind == webhook.Sync || (o.Kind == webhook.Failed && o.Push != nil) {
		attrs = append(attrs, logkey.Function, cfg.SyncFunction)
	}
	if o.Err != nil {
		attrs = append(attrs, logkey.Error, o.Err)
	}
	logger.Log(ctx, webhookLevel(o.Kind), "webhook delivery", attrs...)
	if cfg.Repo != "" && policy.IsRepo(cfg.Repo) {
		r.writeMetrics(logger, cfg.Repo, o, requestID, secrets)
	}
	return webhookResponse(o)
}

// secret reads the webhook secret: through the secrets extension in Lambda,
// from the environment elsewhere.
func (r *Receiver) secret(ctx context.Context, cfg WebhookConfig) (string, error) {
	if cfg.secretARN == "" {
		return cfg.secret, nil
	}
	ext := secretsExtension{baseURL: r.ExtensionURL, sessionToken: r.getenv("AWS_SESSION_TOKEN"), client: r.httpClient}
	s, err := ext.secretString(ctx, cfg.secretARN)
	if err != nil {
		return "", &policy.ConfigError{Setting: EnvWebhookSecretARN, Problem: err.Error()}
	}
	if err := CheckWebhookSecret(EnvWebhookSecretARN, s); err != nil {
		return "", err
	}
	return s, nil
}

// CheckWebhookSecret refuses a webhook secret shorter than
// redact.MinSecretLen, as every secret setting is (design): a short HMAC
// key falls to a guess offline from one captured delivery, and masking it
// wherever it stands alone hid words of the log (an adversarial helper).
// The secret is not shown.
func CheckWebhookSecret(setting, secret string) error {
	switch n := len(secret); {
	case n == 0:
		return &policy.ConfigError{Setting: setting, Problem: "empty or not set: it must hold the webhook secret"}
	case n < redact.MinSecretLen:
		return &policy.ConfigError{Setting: setting, Problem: fmt.Sprintf("the secret is %d characters long: too short (at least %d; GitHub suggests a long random string)", n, redact.MinSecretLen)}
	}
	return nil
}

// handOff queues the sync of a verified push; a failure is a 502, which
// GitHub shows as failed and lets a person redeliver.
func (r *Receiver) handOff(ctx context.Context, cfg WebhookConfig, o webhook.Outcome) webhook.Outcome {
	fail := func(err error) webhook.Outcome {
		o.Kind, o.Status, o.Err = webhook.Failed, http.StatusBadGateway, err
		o.Reason = "could not hand the push to the sync function; redeliver it from GitHub, or the daily run will sync it"
		return o
	}
	if r.handoff == nil {
		return fail(fmt.Errorf("no AWS Lambda client: %w", r.handoffErr))
	}
	ev := WebhookEvent{Trigger: TriggerWebhook, After: o.Push.After, Delivery: o.Delivery, Forced: o.Push.Forced}
	if o.Push.Forced && webhook.IsCommitSHA(o.Push.Before) {
		ev.Before = o.Push.Before
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	if err := r.handoff.InvokeAsync(ctx, cfg.SyncFunction, payload); err != nil {
		return fail(err)
	}
	o.Reason += " queued"
	return o
}

func webhookLevel(k webhook.Kind) slog.Level {
	switch k {
	case webhook.Refused, webhook.Rejected, webhook.Invalid:
		return slog.LevelWarn
	case webhook.Failed:
		return slog.LevelError
	}
	return slog.LevelInfo
}

func webhookResponse(o webhook.Outcome) events.LambdaFunctionURLResponse {
	h := map[string]string{"Content-Type": "text/plain; charset=utf-8"}
	if o.Status == http.StatusMethodNotAllowed {
		h["Allow"] = http.MethodPost
	}
	return events.LambdaFunctionURLResponse{StatusCode: o.Status, Headers: h, Body: o.Reason + "\n"}
}

// WebhookMetrics is the EMF line of one delivery: WebhookRejected counts
// deliveries whose signature was missing or wrong (someone knocking, or a
// secret that differs from GitHub's), WebhookFailed those the receiver
// could not serve (the secret unreadable, the handoff refused).
func WebhookMetrics(repo string, o webhook.Outcome, requestID string, at time.Time) emf.Line {
	one := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	c := func(name string, b bool) emf.Metric { return emf.Metric{Name: name, Unit: emf.Count, Value: one(b)} }
	return emf.Line{
		Namespace:  MetricsNamespace,
		Dimensions: map[string]string{"Repo": repo},
		Metrics: []emf.Metric{
			c("WebhookDeliveries", true),
			c("WebhookRejected", o.Kind == webhook.Rejected),
			c("WebhookHandedOff", o.Kind == webhook.Sync),
			c("WebhookFailed", o.Kind == webhook.Failed),
		},
		Properties: map[string]any{
			slog.MessageKey:   "webhook metrics",
			logkey.Outcome:    string(o.Kind),
			logkey.StatusCode: o.Status,
			logkey.Delivery:   o.Delivery,
			logkey.RequestID:  requestID,
			logkey.Component:  "webhook",
		},
		Time: at,
	}
}

func (r *Receiver) writeMetrics(logger *slog.Logger, repo string, o webhook.Outcome, requestID string, secrets []string) {
	b, err := WebhookMetrics(repo, o, requestID, r.now()).Marshal()
	if err != nil {
		logger.Error("metrics not written", logkey.Error, err)
		return
	}
	b = []byte(redact.String(string(b), secrets...))
	if _, err := r.logs.Write(append(b, '\n')); err != nil {
		logger.Error("metrics not written", logkey.Error, err)
	}
}
