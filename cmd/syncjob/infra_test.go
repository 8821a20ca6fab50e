package main

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/knue/syncjob/internal/config"
	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"

	"github.com/knue/syncjob/internal/lambda"
)

// cfnValue turns a YAML node of a CloudFormation template into plain values,
// with short-form intrinsics (!Ref x, !GetAtt a.b, !If [...]) in their long
// form ({"Ref": "x"}, {"Fn::GetAtt": "a.b"}, {"Fn::If": [...]}).
func cfnValue(t *testing.T, n *yaml.Node) any {
	t.Helper()
	if n.Kind == yaml.DocumentNode {
		return cfnValue(t, n.Content[0])
	}
	if tag := n.Tag; strings.HasPrefix(tag, "!") && !strings.HasPrefix(tag, "!!") {
		inner := *n
		inner.Tag = ""
		name := "Fn::" + tag[1:]
		if tag == "!Ref" {
			name = "Ref"
		}
		return map[string]any{name: cfnValue(t, &inner)}
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i < len(n.Content); i += 2 {
			m[n.Content[i].Value] = cfnValue(t, n.Content[i+1])
		}
		return m
	case yaml.SequenceNode:
		var s []any
		for _, c := range n.Content {
			s = append(s, cfnValue(t, c))
		}
		return s
	case yaml.AliasNode:
		return cfnValue(t, n.Alias)
	}
	var v any
	if err := n.Decode(&v); err != nil {
		t.Fatalf("template line %d: %v", n.Line, err)
	}
	return v
}

type cfnTemplate struct {
	Transform  any
	Parameters map[string]map[string]any
	Conditions map[string]any
	Resources  map[string]cfnResource
}

type cfnResource struct {
	Type       string
	Properties map[string]any
}

func mustTemplate(t *testing.T) cfnTemplate {
	t.Helper()
	b, err := os.ReadFile("../../infra/template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("infra/template.yaml: %v", err)
	}
	root, ok := cfnValue(t, &doc).(map[string]any)
	if !ok {
		t.Fatal("template is not a mapping")
	}
	conditions, _ := root["Conditions"].(map[string]any)
	tpl := cfnTemplate{Transform: root["Transform"], Parameters: map[string]map[string]any{}, Conditions: conditions, Resources: map[string]cfnResource{}}
	for name, p := range root["Parameters"].(map[string]any) {
		tpl.Parameters[name] = p.(map[string]any)
	}
	for name, r := range root["Resources"].(map[string]any) {
		rm := r.(map[string]any)
		props, _ := rm["Properties"].(map[string]any)
		tpl.Resources[name] = cfnResource{Type: rm["Type"].(string), Properties: props}
	}
	return tpl
}

// only returns the one resource of a type, and its logical id.
func (tpl cfnTemplate) only(t *testing.T, typ string) (string, map[string]any) {
	t.Helper()
	var ids []string
	for id, r := range tpl.Resources {
		if r.Type == typ {
			ids = append(ids, id)
		}
	}
	if len(ids) != 1 {
		t.Fatalf("%d resources of type %s, want 1: %v", len(ids), typ, ids)
	}
	return ids[0], tpl.Resources[ids[0]].Properties
}

// path walks nested maps.
func path(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func ref(name string) map[string]any { return map[string]any{"Ref": name} }

func TestInfra_TemplateAgreesWithTheCode(t *testing.T) {
	t.Parallel()
	tpl := mustTemplate(t)
	if tpl.Transform != "AWS::Serverless-2016-10-31" {
		t.Errorf("Transform = %v, want the SAM transform", tpl.Transform)
	}
	fnID, fn := "SyncFunction", tpl.function(t, "SyncFunction") // the receiver: webhook_infra_test.go

	t.Run("function", func(t *testing.T) {
		for k, want := range map[string]any{
			"Handler": "bootstrap", "Runtime": "provided.al2023",
			"CodeUri": "../dist/syncjob-lambda.zip",
		} {
			if fn[k] != want {
				t.Errorf("%s = %v, want %v", k, fn[k], want)
			}
		}
		if a, _ := fn["Architectures"].([]any); !slices.Equal(a, []any{"arm64"}) {
			t.Errorf("Architectures = %v, want [arm64]", fn["Architectures"])
		}
		timeout, _ := fn["Timeout"].(int)
		if time.Duration(timeout)*time.Second < 4*lambda.Reserve || timeout > 900 {
			t.Errorf("Timeout %ds: want room for a run beyond the %v reserve, at most 900", timeout, lambda.Reserve)
		}
		if m, _ := fn["MemorySize"].(int); m < 128 {
			t.Errorf("MemorySize = %v", fn["MemorySize"])
		}
		if !cmpAny(fn["Layers"], []any{ref("SecretsExtensionLayerArn")}) {
			t.Errorf("Layers = %v, want the secrets extension", fn["Layers"])
		}
		if path(fn, "EventInvokeConfig", "DestinationConfig", "OnFailure", "Destination") == nil {
			t.Errorf("no on-failure destination for async invokes")
		}
		lg, ok := path(fn, "LoggingConfig", "LogGroup").(map[string]any)
		if !ok || tpl.Resources[lg["Ref"].(string)].Type != "AWS::Logs::LogGroup" || tpl.Resources[lg["Ref"].(string)].Properties["RetentionInDays"] == nil {
			t.Errorf("LoggingConfig.LogGroup = %v, want a log group of this stack with a retention", lg)
		}
	})

	t.Run("reserved concurrency is a parameter, 1 unless the quota forbids", func(t *testing.T) {
		p := tpl.Parameters["ReservedConcurrency"]
		if p == nil || p["Type"] != "Number" || p["Default"] != 1 || p["MinValue"] != 0 {
			t.Fatalf("parameter ReservedConcurrency = %v, want a Number defaulting to 1, down to 0", p)
		}
		if d, _ := p["Description"].(string); !strings.Contains(d, "quota of 10") || !strings.Contains(d, "lease") {
			t.Errorf("ReservedConcurrency does not say why 0 exists (the quota of 10) and what is left (the lease): %q", d)
		}
		want := map[string]any{"Fn::If": []any{"ReservesConcurrency", ref("ReservedConcurrency"), ref("AWS::NoValue")}}
		if !cmpAny(fn["ReservedConcurrentExecutions"], want) {
			t.Errorf("ReservedConcurrentExecutions = %v, want %v", fn["ReservedConcurrentExecutions"], want)
		}
		cond := map[string]any{"Fn::Not": []any{map[string]any{"Fn::Equals": []any{ref("ReservedConcurrency"), "0"}}}}
		if !cmpAny(tpl.Conditions["ReservesConcurrency"], cond) {
			t.Errorf("condition ReservesConcurrency = %v, want %v", tpl.Conditions["ReservesConcurrency"], cond)
		}
		readme, err := os.ReadFile("../../infra/README.md")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"ReservedConcurrency", "quota of 10", "ReservedConcurrency=0", "lease"} {
			if !strings.Contains(string(readme), want) {
				t.Errorf("infra/README.md does not document %q", want)
			}
		}
	})

	t.Run("make lambda builds what the template deploys", func(t *testing.T) {
		mk, err := os.ReadFile("../../Makefile")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"syncjob-lambda.zip", "-tags lambda.norpc", "GOARCH=arm64", "GOOS=linux", "CGO_ENABLED=0", "/bootstrap ./cmd/syncjob"} {
			if !bytes.Contains(mk, []byte(want)) {
				t.Errorf("Makefile lacks %q", want)
			}
		}
	})

	t.Run("environment names are settings", func(t *testing.T) {
		known := map[string]bool{}
		for _, s := range config.Settings() {
			known[s.Env] = true
		}
		for _, s := range lambda.SecretRefs() {
			known[s.Ref] = true
		}
		vars, _ := path(fn, "Environment", "Variables").(map[string]any)
		if len(vars) == 0 {
			t.Fatal("no environment variables")
		}
		for name := range vars {
			if !known[name] {
				t.Errorf("environment variable %s is not a setting of syncjob", name)
			}
		}
		for _, s := range lambda.SecretRefs() {
			if _, plain := vars[s.Env]; plain {
				t.Errorf("%s is set in the template: a secret's value must come from %s", s.Env, s.Ref)
			}
		}
		if vars["GITHUB_REPO"] == nil || !cmpAny(vars["GITHUB_REPO"], ref("GitHubRepo")) {
			t.Errorf("GITHUB_REPO = %v, want !Ref GitHubRepo (the alarms' Repo dimension)", vars["GITHUB_REPO"])
		}
		if vars["LOG_FORMAT"] != "json" {
			t.Errorf("LOG_FORMAT = %v, want json (the Logs Insights queries need it)", vars["LOG_FORMAT"])
		}
	})

	t.Run("no secret is a parameter", func(t *testing.T) {
		secretish := regexp.MustCompile(`(?i)token|secret|password|credential|apikey`)
		for name, p := range tpl.Parameters {
			if !secretish.MatchString(name) {
				continue
			}
			pattern, _ := p["AllowedPattern"].(string)
			// An ARN names a secret (or the layer that reads it); it is not one.
			if !strings.HasSuffix(name, "Arn") || !strings.Contains(pattern, "^arn:aws[a-z-]*:") {
				t.Errorf("parameter %s looks like a secret: only ARNs (AllowedPattern ^arn:...) may be parameters", name)
			}
			if strings.Contains(name, "Token") && !strings.Contains(pattern, ":secretsmanager:") {
				t.Errorf("parameter %s must be the ARN of a Secrets Manager secret", name)
			}
		}
		found := false
		for _, st := range policyStatements(fn) {
			if st["Action"] == "secretsmanager:GetSecretValue" {
				found = true
			}
		}
		if !found {
			t.Errorf("the function may not read its secrets (no secretsmanager:GetSecretValue)")
		}
	})

	t.Run("schedule", func(t *testing.T) {
		_, s := tpl.only(t, "AWS::Scheduler::Schedule")
		expr, tz := s["ScheduleExpression"], s["ScheduleExpressionTimezone"]
		if !(expr == "cron(0 16 * * ? *)" && (tz == "UTC" || tz == nil)) && !(expr == "cron(0 1 * * ? *)" && tz == "Asia/Seoul") {
			t.Errorf("schedule %v in %v, want 16:00 UTC daily", expr, tz)
		}
		if !cmpAny(path(s, "Target", "Arn"), map[string]any{"Fn::GetAtt": fnID + ".Arn"}) {
			t.Errorf("schedule target %v, want the function", path(s, "Target", "Arn"))
		}
		input, _ := path(s, "Target", "Input").(string)
		opt, err := lambda.ParseEvent([]byte(input))
		if err != nil || opt.Trigger != lambda.TriggerSchedule || opt.Full || opt.DryRun {
			t.Errorf("schedule input %q: %+v, %v; want the handler's scheduled event", input, opt, err)
		}
		if n, _ := path(s, "Target", "RetryPolicy", "MaximumRetryAttempts").(int); n < 1 {
			t.Errorf("schedule has no retry policy")
		}
		if path(s, "Target", "DeadLetterConfig", "Arn") == nil {
			t.Errorf("schedule has no dead-letter queue")
		}
	})

	t.Run("alarms", func(t *testing.T) {
		metrics := map[string]bool{}
		line := lambda.RunMetrics("knue/policies", "main", policy.RunSummary{}, "", time.Time{})
		for _, m := range line.Metrics {
			metrics[m.Name] = true
		}
		for _, name := range webhookMetricNames() { // the receiver's EMF line
			metrics[name] = true
		}
		seen := map[string]map[string]any{}
		for id, r := range tpl.Resources {
			if r.Type != "AWS::CloudWatch::Alarm" {
				continue
			}
			a := r.Properties
			if a["AlarmActions"] == nil {
				t.Errorf("%s notifies nobody", id)
			}
			if p, n := a["Period"].(int), a["EvaluationPeriods"].(int); p*n > 7*24*3600 || (p < 3600 && p*n > 24*3600) {
				t.Errorf("%s evaluates %ds, over CloudWatch's limit", id, p*n)
			}
			ns, _ := a["Namespace"].(string)
			name, _ := a["MetricName"].(string)
			seen[ns+"/"+name] = a
			if ns != lambda.MetricsNamespace {
				continue
			}
			if !metrics[name] {
				t.Errorf("%s reads metric %s, which the EMF line does not publish", id, name)
			}
			dims, _ := a["Dimensions"].([]any)
			if len(dims) != len(line.Dimensions) {
				t.Errorf("%s dimensions %v, want exactly those of the EMF line", id, dims)
			}
			for _, d := range dims {
				dm := d.(map[string]any)
				if _, ok := line.Dimensions[dm["Name"].(string)]; !ok || !cmpAny(dm["Value"], ref("GitHubRepo")) {
					t.Errorf("%s dimension %v, want Repo = !Ref GitHubRepo", id, dm)
				}
			}
		}
		if a := tpl.alarmOn("AWS/Lambda", "Errors", "FunctionName", fnID); a == nil {
			t.Errorf("no invocation-errors alarm on the function")
		}
		for _, m := range []string{"RunFailed", "RunPartial", "HeldBack"} {
			if a := seen[lambda.MetricsNamespace+"/"+m]; a == nil || a["ComparisonOperator"] != "GreaterThanOrEqualToThreshold" || a["Threshold"] != 1 {
				t.Errorf("no alarm on one %s run: %v", m, a)
			}
		}
		hb := seen[lambda.MetricsNamespace+"/RunSucceeded"]
		if hb == nil {
			t.Fatal("no alarm on the absence of successful runs")
		}
		window := time.Duration(hb["Period"].(int)*hb["EvaluationPeriods"].(int)) * time.Second
		if window != 26*time.Hour || hb["DatapointsToAlarm"] != hb["EvaluationPeriods"] || hb["ComparisonOperator"] != "LessThanThreshold" || hb["TreatMissingData"] != "breaching" {
			t.Errorf("heartbeat alarm = %v; want: fewer than 1 success in every period of 26 hours, missing data breaching", hb)
		}
	})
}

func policyStatements(fn map[string]any) []map[string]any {
	var out []map[string]any
	pols, _ := fn["Policies"].([]any)
	for _, p := range pols {
		sts, _ := path(p, "Statement").([]any)
		for _, st := range sts {
			if m, ok := st.(map[string]any); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

func cmpAny(a, b any) bool {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for k := range av {
			if !cmpAny(av[k], bv[k]) {
				return false
			}
		}
		return true
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := range av {
			if !cmpAny(av[i], bv[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}

// TestInfra_LogsInsightsQueries_UseFieldsWeLog runs the job into every kind
// of line the README's queries read and checks each message and field they
// name appears in some line.
func TestInfra_LogsInsightsQueries_UseFieldsWeLog(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../infra/README.md")
	if err != nil {
		t.Fatal(err)
	}
	var queries []string
	for i, block := range strings.Split(string(readme), "```") {
		if i%2 == 1 && strings.Contains(block, "| filter") || strings.HasPrefix(strings.TrimSpace(block), "# ") && strings.Contains(block, "filter ") {
			queries = append(queries, block)
		}
	}
	if len(queries) < 5 {
		t.Fatalf("found %d Logs Insights queries in infra/README.md, want at least 5", len(queries))
	}

	// Every kind of line: a first run with a skipped file and a name
	// conflict, a partial run, a failed run, a rejected event.
	w := newWorld(t)
	seed(w)
	w.repo.Write("규정/빈 규정.md", "")
	w.repo.Write("별표/학칙.md", "# 학칙 사본\n")
	w.repo.Commit("skip and conflict")
	var logs strings.Builder
	logs.WriteString(w.invoke(`{"trigger":"schedule"}`, time.Minute).logs)
	w.repo.Write("규정/새 규정.md", "# 새 규정\n")
	w.repo.Commit("add")
	w.gh.FailNext(githubtest.KindBlob, -1, githubtest.ServerError(500))
	logs.WriteString(w.invoke(`{}`, time.Minute).logs)
	w.gh.FailNext(githubtest.AnyKind, -1, githubtest.ServerError(502))
	logs.WriteString(w.invoke(`{"mode":"full"}`, time.Minute).logs)
	logs.WriteString(w.invoke(`{"mode":"fast"}`, time.Minute).logs)
	logs.WriteString(webhookSampleLogs(t)) // the receiver's log group

	inv := invocation{logs: logs.String()}
	msgs := map[string]bool{}
	fields := map[string]bool{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			fields[prefix+k] = true
			if sub, ok := v.(map[string]any); ok {
				walk(prefix+k+".", sub)
			}
		}
	}
	for _, line := range inv.lines(t) {
		if msg, ok := line["msg"].(string); ok {
			msgs[msg] = true
		}
		walk("", line)
	}

	quoted := regexp.MustCompile(`"([^"]+)"`)
	msgFilter := regexp.MustCompile(`msg\s*(?:=\s*"[^"]+"|in\s*\[[^\]]*\])`)
	fieldRef := regexp.MustCompile(`(?:^|[\s,(|])([A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)?)\s*(?:[,)]|=|!=|\sin\s|\sasc|\sdesc|$)`)
	keywords := map[string]bool{"fields": true, "filter": true, "sort": true, "limit": true, "stats": true, "by": true, "and": true, "or": true, "as": true, "in": true,
		"count": true, "sum": true, "max": true, "bin": true, "desc": true, "asc": true}
	for _, q := range queries {
		for _, mf := range msgFilter.FindAllString(q, -1) {
			for _, m := range quoted.FindAllStringSubmatch(mf, -1) {
				if !msgs[m[1]] {
					t.Errorf("query filters on msg %q, which no line has:\n%s", m[1], q)
				}
			}
		}
		for _, line := range strings.Split(q, "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "#") || line == "" {
				continue
			}
			line = quoted.ReplaceAllString(line, `""`)
			for _, m := range fieldRef.FindAllStringSubmatch(line, -1) {
				f := m[1]
				if keywords[f] || strings.HasPrefix(f, "@") || strings.Contains(line, " as "+f) {
					continue
				}
				if !fields[f] {
					t.Errorf("query reads field %q, which no line has:\n%s", f, q)
				}
			}
		}
	}
}
