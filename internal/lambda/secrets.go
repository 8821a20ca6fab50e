package lambda

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/knue/syncjob/internal/policy"
)

// secretsExtensionPort is the default port of the AWS Parameters and Secrets
// Lambda Extension; PARAMETERS_SECRETS_EXTENSION_HTTP_PORT (the extension's
// own setting) changes it.
const secretsExtensionPort = "2773"

// SecretRef is a secret setting that Lambda may instead name by the ARN (or
// name) of an AWS Secrets Manager secret, read at each invocation through the
// Parameters and Secrets extension, so the value never passes through
// CloudFormation, the function's configuration or a log.
type SecretRef struct {
	Env string // the setting, e.g. GITHUB_TOKEN
	Ref string // the variable naming its secret, e.g. GITHUB_TOKEN_SECRET_ARN
}

// SecretRefs are the settings Lambda may read from Secrets Manager.
func SecretRefs() []SecretRef {
	return []SecretRef{
		{Env: "GITHUB_TOKEN", Ref: "GITHUB_TOKEN_SECRET_ARN"},
		{Env: "CLOUDFLARE_API_TOKEN", Ref: "CLOUDFLARE_API_TOKEN_SECRET_ARN"},
		{Env: "CONTENT_SECRET_ACCESS_KEY", Ref: "CONTENT_SECRET_ACCESS_KEY_SECRET_ARN"},
	}
}

// secretsExtension is a client of the Parameters and Secrets extension,
// which caches each secret (300 s by default) and signs the AWS request
// itself: no SDK is needed to read a secret.
type secretsExtension struct {
	baseURL      string
	sessionToken string // AWS_SESSION_TOKEN, the extension's credential
	client       *http.Client
}

// resolveSecrets returns getenv with every secret reference replaced by its
// value, read from ext. A reference set beside its plain setting, or a
// secret that cannot be read, is a *policy.ConfigError naming the reference.
func resolveSecrets(ctx context.Context, getenv func(string) string, ext secretsExtension) (func(string) string, error) {
	resolved := map[string]string{}
	for _, s := range SecretRefs() {
		id := strings.TrimSpace(getenv(s.Ref))
		if id == "" {
			continue
		}
		if getenv(s.Env) != "" {
			return nil, &policy.ConfigError{Setting: s.Ref, Problem: "set " + s.Env + " or " + s.Ref + ", not both"}
		}
		v, err := ext.secretString(ctx, id)
		if err != nil {
			return nil, &policy.ConfigError{Setting: s.Ref, Problem: err.Error()}
		}
		resolved[s.Env] = v
	}
	return func(k string) string {
		if v, ok := resolved[k]; ok {
			return v
		}
		return getenv(k)
	}, nil
}

// secretString reads the SecretString of a Secrets Manager secret.
func (x secretsExtension) secretString(ctx context.Context, id string) (string, error) {
	u := x.baseURL + "/secretsmanager/get?secretId=" + url.QueryEscape(id)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", fmt.Errorf("secrets extension: get %s: %w", id, err)
	}
	req.Header.Set("X-Aws-Parameters-Secrets-Token", x.sessionToken)
	resp, err := x.client.Do(req)
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

// Setting is a setting only the Lambda functions read.
type Setting struct{ Env, Help string }

// Settings are the settings the Lambda functions read beyond the CLI's;
// README's settings table lists them after the CLI's.
func Settings() []Setting {
	var out []Setting
	for _, r := range SecretRefs() {
		out = append(out, Setting{r.Ref, "Lambda: read " + r.Env + " from this Secrets Manager secret (ARN or name) at each invocation"})
	}
	return append(out,
		Setting{EnvSyncFunction, "webhook receiver: the sync function it hands pushes to; set, this function is the receiver"},
		Setting{EnvWebhookSecretARN, "webhook receiver: the Secrets Manager secret GitHub signs deliveries with"},
		Setting{EnvWebhookSecret, "the webhook secret itself, outside Lambda (read by syncjob webhook verify)"},
	)
}
