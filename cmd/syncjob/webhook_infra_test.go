package main

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/knue/syncjob/internal/webhook"

	"github.com/knue/syncjob/internal/lambda"
)

// function returns the properties of the AWS::Serverless::Function id.
func (tpl cfnTemplate) function(t *testing.T, id string) map[string]any {
	t.Helper()
	r, ok := tpl.Resources[id]
	if !ok || r.Type != "AWS::Serverless::Function" {
		t.Fatalf("no AWS::Serverless::Function %s in the template", id)
	}
	return r.Properties
}

// alarmOn returns the alarm on namespace/metric whose dimension dim is a
// reference to id, or nil.
func (tpl cfnTemplate) alarmOn(namespace, metric, dim, id string) map[string]any {
	want := []any{map[string]any{"Name": dim, "Value": ref(id)}}
	for _, r := range tpl.Resources {
		a := r.Properties
		if r.Type == "AWS::CloudWatch::Alarm" && a["Namespace"] == namespace && a["MetricName"] == metric && cmpAny(a["Dimensions"], want) {
			return a
		}
	}
	return nil
}

// webhookMetricNames are the metrics of the receiver's EMF line.
func webhookMetricNames() []string {
	var names []string
	for _, m := range lambda.WebhookMetrics("knue/policies", webhook.Outcome{}, "", time.Time{}).Metrics {
		names = append(names, m.Name)
	}
	return names
}

// webhookSampleLogs are the receiver's lines of a handed-off push, a
// rejected delivery, an ignored one and a failed handoff.
func webhookSampleLogs(t *testing.T) string {
	t.Helper()
	var out strings.Builder
	r := newReceiverRig(t)
	push := delivery("push", testDelivery, pushPayload("knue/policies", "refs/heads/main", testSHA), testWebhookSecret)
	out.WriteString(r.deliver(push).logs.logs)
	out.WriteString(r.deliver(withHeader(push, "x-hub-signature-256", "")).logs.logs)
	out.WriteString(r.deliver(delivery("push", testDelivery, pushPayload("knue/policies", "refs/heads/dev", testSHA), testWebhookSecret)).logs.logs)
	r.lambda.fail(404, "ResourceNotFoundException")
	out.WriteString(r.deliver(push).logs.logs)
	return out.String()
}

func TestInfra_WebhookReceiver_AgreesWithTheCode(t *testing.T) {
	t.Parallel()
	tpl := mustTemplate(t)
	const id = "WebhookFunction"
	rcv, sync := tpl.function(t, id), tpl.function(t, "SyncFunction")

	t.Run("same artifact, no reserved concurrency", func(t *testing.T) {
		for _, k := range []string{"CodeUri", "Handler", "Runtime", "Architectures", "Layers"} {
			if !cmpAny(rcv[k], sync[k]) {
				t.Errorf("%s = %v, want the sync function's %v", k, rcv[k], sync[k])
			}
		}
		if v, ok := rcv["ReservedConcurrentExecutions"]; ok {
			t.Errorf("ReservedConcurrentExecutions = %v: the receiver must always answer", v)
		}
		timeout, _ := rcv["Timeout"].(int)
		if d := time.Duration(timeout) * time.Second; d <= lambda.HandoffTimeout || d > 10*time.Second {
			t.Errorf("Timeout %ds: want more than the %v handoff, at most GitHub's 10 s", timeout, lambda.HandoffTimeout)
		}
		lg, ok := path(rcv, "LoggingConfig", "LogGroup").(map[string]any)
		if !ok || tpl.Resources[lg["Ref"].(string)].Type != "AWS::Logs::LogGroup" || tpl.Resources[lg["Ref"].(string)].Properties["RetentionInDays"] == nil {
			t.Errorf("LoggingConfig.LogGroup = %v, want a log group of this stack with a retention", lg)
		}
		if cmpAny(path(rcv, "LoggingConfig", "LogGroup"), path(sync, "LoggingConfig", "LogGroup")) {
			t.Errorf("the receiver logs into the sync function's log group")
		}
	})

	t.Run("function URL, open: the signature is the authentication", func(t *testing.T) {
		if path(rcv, "FunctionUrlConfig", "AuthType") != "NONE" {
			t.Errorf("FunctionUrlConfig = %v, want AuthType NONE", rcv["FunctionUrlConfig"])
		}
		// The transform adds the public grants (lambda:InvokeFunctionUrl,
		// and lambda:InvokeFunction with lambda:InvokedViaFunctionUrl);
		// nothing else may grant the receiver to anyone.
		for rid, r := range tpl.Resources {
			if r.Type == "AWS::Lambda::Permission" && cmpAny(r.Properties["FunctionName"], ref(id)) {
				t.Errorf("permission %s on the receiver: the function URL's grants come from FunctionUrlConfig", rid)
			}
		}
	})

	t.Run("environment", func(t *testing.T) {
		vars, _ := path(rcv, "Environment", "Variables").(map[string]any)
		known := []string{lambda.EnvSyncFunction, "GITHUB_REPO", "GITHUB_BRANCH", lambda.EnvWebhookSecretARN}
		for name := range vars {
			if !slices.Contains(known, name) {
				t.Errorf("environment variable %s is not read by the receiver", name)
			}
		}
		for name, want := range map[string]any{
			lambda.EnvSyncFunction:     ref("SyncFunction"),
			"GITHUB_REPO":              ref("GitHubRepo"),
			"GITHUB_BRANCH":            ref("GitHubBranch"),
			lambda.EnvWebhookSecretARN: ref("WebhookSecret"),
		} {
			if !cmpAny(vars[name], want) {
				t.Errorf("%s = %v, want %v", name, vars[name], want)
			}
		}
		sample := map[string]string{lambda.EnvSyncFunction: "syncjob-SyncFunction-x", "GITHUB_REPO": "knue/policies", "GITHUB_BRANCH": "main", lambda.EnvWebhookSecretARN: testWebhookARN}
		env := func(k string) string {
			if _, set := vars[k]; set {
				return sample[k]
			}
			return ""
		}
		if _, err := lambda.LoadWebhookConfig(env); err != nil {
			t.Errorf("the template's environment does not configure the receiver: %v", err)
		}
		secret := tpl.Resources["WebhookSecret"]
		if secret.Type != "AWS::SecretsManager::Secret" || path(secret.Properties, "GenerateSecretString", "PasswordLength") == nil {
			t.Errorf("WebhookSecret = %+v, want a Secrets Manager secret the stack generates", secret)
		}
		// The sync function must not become a receiver.
		if path(sync, "Environment", "Variables", lambda.EnvSyncFunction) != nil {
			t.Errorf("the sync function has %s: it would serve as the receiver", lambda.EnvSyncFunction)
		}
	})

	t.Run("it may start the sync function and read its secret, nothing more", func(t *testing.T) {
		pols, _ := rcv["Policies"].([]any)
		for _, p := range pols {
			if _, ok := path(p, "Statement").([]any); !ok {
				t.Errorf("policy %v: only explicit statements (a SAM policy template grants more than it names)", p)
			}
		}
		var invoke, read int
		for _, st := range policyStatements(rcv) {
			switch act := st["Action"]; {
			case act == "lambda:InvokeFunction":
				invoke++
				if !cmpAny(st["Resource"], map[string]any{"Fn::GetAtt": "SyncFunction.Arn"}) {
					t.Errorf("lambda:InvokeFunction on %v, want the sync function only", st["Resource"])
				}
			case act == "secretsmanager:GetSecretValue":
				read++
				if !cmpAny(st["Resource"], ref("WebhookSecret")) {
					t.Errorf("secretsmanager:GetSecretValue on %v, want the webhook secret only", st["Resource"])
				}
			default:
				t.Errorf("statement allows %v", act)
			}
			if st["Effect"] != "Allow" {
				t.Errorf("statement %v", st)
			}
		}
		if invoke != 1 || read != 1 {
			t.Errorf("%d invoke and %d secret statements, want 1 each", invoke, read)
		}
	})

	t.Run("alarms", func(t *testing.T) {
		for _, m := range []string{"WebhookRejected", "WebhookFailed"} {
			if a := tpl.alarmOn(lambda.MetricsNamespace, m, "Repo", "GitHubRepo"); a == nil || a["Threshold"] != 1 || a["ComparisonOperator"] != "GreaterThanOrEqualToThreshold" {
				t.Errorf("no alarm on one %s delivery: %v", m, a)
			}
		}
		if tpl.alarmOn("AWS/Lambda", "Errors", "FunctionName", id) == nil {
			t.Errorf("no invocation-errors alarm on the receiver")
		}
	})

	t.Run("outputs", func(t *testing.T) {
		b, err := os.ReadFile("../../infra/template.yaml")
		if err != nil {
			t.Fatal(err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		outputs, _ := cfnValue(t, &doc).(map[string]any)["Outputs"].(map[string]any)
		if !cmpAny(path(outputs, "WebhookUrl", "Value"), map[string]any{"Fn::GetAtt": id + "Url.FunctionUrl"}) {
			t.Errorf("WebhookUrl output = %v, want the function URL (SAM names it %sUrl)", outputs["WebhookUrl"], id)
		}
		if !cmpAny(path(outputs, "WebhookSecretArn", "Value"), ref("WebhookSecret")) {
			t.Errorf("WebhookSecretArn output = %v", outputs["WebhookSecretArn"])
		}
	})
}
