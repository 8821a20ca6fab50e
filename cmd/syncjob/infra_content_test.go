package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/config"
	"github.com/knue/syncjob/internal/lambda"
	"github.com/knue/syncjob/internal/wire"
)

// noValue is what !Ref AWS::NoValue resolves to: the property is left out.
type noValue struct{}

// cfnEval resolves the intrinsics this template uses (Ref, Fn::If,
// Fn::Not, Fn::Equals, Fn::And, Condition) for the given parameters.
type cfnEval struct {
	tpl    cfnTemplate
	params map[string]string
}

func (e cfnEval) value(t *testing.T, v any) any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return v
	}
	switch {
	case m["Ref"] == "AWS::NoValue":
		return noValue{}
	case m["Ref"] != nil:
		name := m["Ref"].(string)
		p, ok := e.params[name]
		if !ok {
			t.Fatalf("!Ref %s: not a parameter of the test", name)
		}
		return p
	case m["Fn::If"] != nil:
		args := m["Fn::If"].([]any)
		if e.condition(t, args[0].(string)) {
			return e.value(t, args[1])
		}
		return e.value(t, args[2])
	}
	return v
}

func (e cfnEval) condition(t *testing.T, name string) bool {
	t.Helper()
	c, ok := e.tpl.Conditions[name]
	if !ok {
		t.Fatalf("no condition %s", name)
	}
	return e.truth(t, c)
}

func (e cfnEval) truth(t *testing.T, v any) bool {
	t.Helper()
	m := v.(map[string]any)
	switch {
	case m["Fn::Condition"] != nil:
		return e.condition(t, m["Fn::Condition"].(string))
	case m["Fn::Not"] != nil:
		return !e.truth(t, m["Fn::Not"].([]any)[0])
	case m["Fn::And"] != nil:
		for _, c := range m["Fn::And"].([]any) {
			if !e.truth(t, c) {
				return false
			}
		}
		return true
	case m["Fn::Equals"] != nil:
		args := m["Fn::Equals"].([]any)
		return e.value(t, args[0]) == e.value(t, args[1])
	}
	t.Fatalf("condition %v: not understood", v)
	return false
}

// params are the template's parameter defaults, with set over them.
func (tpl cfnTemplate) params(set map[string]string) map[string]string {
	out := map[string]string{}
	for name, p := range tpl.Parameters {
		if d, ok := p["Default"]; ok {
			out[name] = fmtAny(d)
		}
	}
	maps.Copy(out, set)
	return out
}

func fmtAny(v any) string { return fmt.Sprint(v) }

// environment is the sync function's environment as deployed with params.
func (tpl cfnTemplate) environment(t *testing.T, params map[string]string) map[string]string {
	t.Helper()
	e := cfnEval{tpl: tpl, params: params}
	vars, _ := path(tpl.function(t, "SyncFunction"), "Environment", "Variables").(map[string]any)
	env := map[string]string{}
	for name, v := range vars {
		switch r := e.value(t, v).(type) {
		case noValue:
		case string:
			env[name] = r
		default:
			env[name] = fmtAny(r)
		}
	}
	return env
}

// readsSecret says whether the function's role may read the secret arn.
func (tpl cfnTemplate) readsSecret(t *testing.T, params map[string]string, arn string) bool {
	t.Helper()
	e := cfnEval{tpl: tpl, params: params}
	pols, _ := tpl.function(t, "SyncFunction")["Policies"].([]any)
	for _, p := range pols {
		sts, _ := path(p, "Statement").([]any)
		for _, st := range sts {
			m, ok := e.value(t, st).(map[string]any)
			if !ok || m["Action"] != "secretsmanager:GetSecretValue" {
				continue
			}
			res := e.value(t, m["Resource"])
			if res == arn || (slices.ContainsFunc(asList(res), func(r any) bool { return e.value(t, r) == arn })) {
				return true
			}
		}
	}
	return false
}

func asList(v any) []any { l, _ := v.([]any); return l }

func TestInfra_ContentMirror_R2SettingsReachTheFunction_SecretThroughSecretsManager(t *testing.T) {
	t.Parallel()
	tpl := mustTemplate(t)
	const secretARN = "arn:aws:secretsmanager:ap-northeast-2:123456789012:secret:syncjob/content-AbCdEf"
	params := tpl.params(map[string]string{
		"GitHubRepo": "knue/policies", "CloudflareAccountId": cfAccountID, "CloudflareKvNamespaceId": cfNamespaceID,
		"CloudflareApiTokenSecretArn":     "arn:aws:secretsmanager:ap-northeast-2:123456789012:secret:syncjob/cf-AbCdEf",
		"ContentBucket":                   "policies-prod",
		"ContentEndpoint":                 "https://0123456789abcdef0123456789abcdef.r2.cloudflarestorage.com",
		"ContentAccessKeyId":              "0123456789abcdef0123456789abcdef",
		"ContentSecretAccessKeySecretArn": secretARN,
	})
	env := tpl.environment(t, params)
	for name, want := range map[string]string{
		"CONTENT_BUCKET":                       "policies-prod",
		"CONTENT_ENDPOINT":                     params["ContentEndpoint"],
		"CONTENT_REGION":                       "auto",
		"CONTENT_ACCESS_KEY_ID":                params["ContentAccessKeyId"],
		"CONTENT_SECRET_ACCESS_KEY_SECRET_ARN": secretARN,
		"CONTENT_PREFIX":                       "policies/",
	} {
		if env[name] != want {
			t.Errorf("%s = %q, want %q", name, env[name], want)
		}
	}
	// Every CONTENT_* setting a Lambda can use reaches it: all but the
	// local folder, the secret by its reference.
	for _, s := range config.Settings() {
		if s.Group&config.Mirror == 0 || s.Env == "CONTENT_DIR" {
			continue
		}
		name := s.Env
		for _, r := range lambda.SecretRefs() {
			if r.Env == s.Env {
				name = r.Ref
			}
		}
		if _, ok := env[name]; !ok {
			t.Errorf("the template does not pass %s", name)
		}
	}
	if !tpl.readsSecret(t, params, secretARN) {
		t.Errorf("the function may not read the content secret %s", secretARN)
	}
	// What the function reads, its secret resolved as internal/lambda does,
	// is a valid configuration with the mirror on.
	env["CLOUDFLARE_API_TOKEN"], env["CONTENT_SECRET_ACCESS_KEY"] = cfToken, "content-secret-0123456789abcdef0123456789abcdef"
	delete(env, "CLOUDFLARE_API_TOKEN_SECRET_ARN")
	delete(env, "CONTENT_SECRET_ACCESS_KEY_SECRET_ARN")
	if _, err := wire.LambdaJob(wire.Hooks{})(func(k string) string { return env[k] }, io.Discard); err != nil {
		t.Errorf("the deployed configuration is refused: %v", err)
	}
}

func TestInfra_ContentMirror_OffByDefault_NoContentSettingNoS3Grant(t *testing.T) {
	t.Parallel()
	tpl := mustTemplate(t)
	params := tpl.params(map[string]string{
		"GitHubRepo": "knue/policies", "CloudflareAccountId": cfAccountID, "CloudflareKvNamespaceId": cfNamespaceID,
		"CloudflareApiTokenSecretArn": "arn:aws:secretsmanager:ap-northeast-2:123456789012:secret:syncjob/cf-AbCdEf",
	})
	for name := range tpl.environment(t, params) {
		if strings.HasPrefix(name, "CONTENT_") {
			t.Errorf("%s is set without a ContentBucket", name)
		}
	}
	e := cfnEval{tpl: tpl, params: params}
	pols, _ := tpl.function(t, "SyncFunction")["Policies"].([]any)
	for _, p := range pols {
		for _, st := range asList(path(p, "Statement")) {
			if m, ok := e.value(t, st).(map[string]any); ok && strings.Contains(fmtAny(m["Action"]), "s3:") {
				t.Errorf("an S3 grant without a mirror: %v", m)
			}
		}
	}
}

func TestInfra_ContentMirror_OnAWSS3_TheRoleMayWriteThePrefix(t *testing.T) {
	t.Parallel()
	tpl := mustTemplate(t)
	params := tpl.params(map[string]string{
		"GitHubRepo": "knue/policies", "CloudflareAccountId": cfAccountID, "CloudflareKvNamespaceId": cfNamespaceID,
		"CloudflareApiTokenSecretArn": "arn:aws:secretsmanager:ap-northeast-2:123456789012:secret:syncjob/cf-AbCdEf",
		"ContentBucket":               "policies-prod",
	})
	env := tpl.environment(t, params)
	for _, name := range []string{"CONTENT_ENDPOINT", "CONTENT_ACCESS_KEY_ID", "CONTENT_SECRET_ACCESS_KEY_SECRET_ARN"} {
		if _, ok := env[name]; ok {
			t.Errorf("%s set on AWS S3 (the role's credentials are used)", name)
		}
	}
	e := cfnEval{tpl: tpl, params: params}
	granted := map[string]bool{}
	pols, _ := tpl.function(t, "SyncFunction")["Policies"].([]any)
	for _, p := range pols {
		for _, st := range asList(path(p, "Statement")) {
			if m, ok := e.value(t, st).(map[string]any); ok {
				for _, a := range append(asList(m["Action"]), m["Action"]) {
					granted[fmtAny(a)] = true
				}
			}
		}
	}
	for _, want := range []string{"s3:PutObject", "s3:DeleteObject", "s3:ListBucket"} {
		if !granted[want] {
			t.Errorf("the role lacks %s for the mirror on AWS S3", want)
		}
	}
	if _, err := wire.LambdaJob(wire.Hooks{})(func(k string) string {
		if k == "CLOUDFLARE_API_TOKEN" {
			return cfToken
		}
		return env[k]
	}, io.Discard); err != nil {
		t.Errorf("the deployed configuration is refused: %v", err)
	}
}
