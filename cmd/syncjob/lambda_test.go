package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/wire"

	"github.com/knue/syncjob/internal/lambda"
)

// invocation is one call of the Lambda handler.
type invocation struct {
	sum  policy.RunSummary
	plan *policy.Plan // set on a dry run
	err  error
	logs string
}

// lines returns the log lines (JSON objects) of the invocation.
func (inv invocation) lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(inv.logs), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %v\n%s", err, line)
		}
		out = append(out, m)
	}
	return out
}

// line returns the one line whose msg is msg.
func (inv invocation) line(t *testing.T, msg string) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, m := range inv.lines(t) {
		if m["msg"] == msg {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d lines %q, want 1; logs:\n%s", len(found), msg, inv.logs)
	}
	return found[0]
}

// metrics returns the EMF lines of the invocation.
func (inv invocation) metrics(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, m := range inv.lines(t) {
		if _, ok := m["_aws"]; ok {
			out = append(out, m)
		}
	}
	return out
}

// testHandler is a Lambda handler and the buffer it logs to.
type testHandler struct {
	*lambda.Handler
	logs *bytes.Buffer
}

// lambdaDeps are the deps of a world's Lambda handler.
func (w *world) lambdaDeps() deps {
	return deps{
		now: func() time.Time { return w.now },
		// Retries wait for nothing. (Blobs are read concurrently: this hook
		// records nothing, so it needs no lock.)
		httpClient: &githubHTTP{sleep: func(ctx context.Context, _ time.Duration) error {
			return ctx.Err()
		}},
	}
}

// lambdaHandler returns a handler on the world's fake GitHub and registry.
func (w *world) lambdaHandler(logs *bytes.Buffer) *testHandler {
	d := w.lambdaDeps()
	return &testHandler{lambda.NewHandler(func(k string) string { return w.env[k] }, logs, d.now, wire.LambdaJob(d.hooks())), logs}
}

// invoke calls the handler as the Lambda runtime would: a context carrying a
// request id and a deadline timeout from now.
func (w *world) invoke(payload string, timeout time.Duration) invocation {
	w.t.Helper()
	return w.invokeWith(w.lambdaHandler(new(bytes.Buffer)), payload, timeout)
}

func (w *world) invokeWith(h *testHandler, payload string, timeout time.Duration) invocation {
	w.t.Helper()
	logs := h.logs
	logs.Reset()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: "req-0001"})
	res, err := h.Handle(ctx, json.RawMessage(payload))
	w.now = w.now.Add(time.Hour)
	return invocation{sum: res.RunSummary, plan: res.Plan, err: err, logs: logs.String()}
}

func TestLambda_ScheduledEvent_SyncsAndReturnsSummary(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	head := seed(w)
	inv := w.invoke(`{"trigger":"schedule"}`, time.Minute)
	if inv.err != nil {
		t.Fatalf("handler: %v\n%s", inv.err, inv.logs)
	}
	s := inv.sum
	if s.Status != policy.RunSuccess || s.Trigger != "schedule" || s.Mode != "full" || s.Added != 3 || s.CommitSHA != head || s.RunID == "" {
		t.Errorf("summary = %+v", s)
	}
	st := w.state()
	if st.lastCommit != head || len(st.policies) != 3 || st.lastRun == nil || st.lastRun.Trigger != "schedule" {
		t.Errorf("registry: lastCommit %q, %d policies, lastRun %+v", st.lastCommit, len(st.policies), st.lastRun)
	}

	fin := inv.line(t, "run finished")
	for k, want := range map[string]any{
		"runId": s.RunID, "trigger": "schedule", "awsRequestId": "req-0001", "repo": "knue/policies",
		"branch": "main", "commit": head, "previousCommit": "", "mode": "full", "status": "success", "added": float64(3),
	} {
		if fin[k] != want {
			t.Errorf("run finished: %s = %v, want %v", k, fin[k], want)
		}
	}
	if _, ok := fin["requests"].(map[string]any)["github"]; !ok {
		t.Errorf("run finished has no requests per API: %v", fin)
	}
	if _, ok := fin["durationMs"]; !ok {
		t.Errorf("run finished has no duration: %v", fin)
	}
	for _, m := range inv.lines(t) {
		if _, emf := m["_aws"]; !emf && m["awsRequestId"] != "req-0001" {
			t.Errorf("line without the request id: %v", m)
		}
	}

	emfLines := inv.metrics(t)
	if len(emfLines) != 1 {
		t.Fatalf("%d EMF lines, want 1:\n%s", len(emfLines), inv.logs)
	}
	m := emfLines[0]
	cw := m["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
	if cw["Namespace"] != lambda.MetricsNamespace || !cmp.Equal(cw["Dimensions"], []any{[]any{"Repo"}}) {
		t.Errorf("EMF directive = %v", cw)
	}
	for k, want := range map[string]any{
		"Repo": "knue/policies", "Added": 3.0, "Updated": 0.0, "Deleted": 0.0, "Failed": 0.0, "Skipped": 0.0,
		"RunSucceeded": 1.0, "RunFailed": 0.0, "RunPartial": 0.0, "runId": s.RunID, "trigger": "schedule", "commit": head,
	} {
		if m[k] != want {
			t.Errorf("EMF %s = %v, want %v", k, m[k], want)
		}
	}
	for _, k := range []string{"DurationMs", "PhaseReadMs", "PhasePlanMs", "PhaseFetchMs", "PhaseApplyMs", "RegistryRequests", "BillableWrites"} {
		if _, ok := m[k]; !ok {
			t.Errorf("EMF line has no %s: %v", k, m)
		}
	}
}

func TestLambda_SameEventTwice_SecondRunIsUnchangedNoOp(t *testing.T) {
	t.Parallel()
	// Lambda retries a failed asynchronous invocation with the same event,
	// and the scheduler may deliver one twice: a run recomputes everything
	// from the repository and the registry, so a repeat changes nothing.
	w := newWorld(t)
	head := seed(w)
	if inv := w.invoke(`{"trigger":"schedule"}`, time.Minute); inv.err != nil {
		t.Fatalf("first: %v", inv.err)
	}
	before := w.state()
	w.gh.ResetRequests()
	inv := w.invoke(`{"trigger":"schedule"}`, time.Minute)
	if inv.err != nil {
		t.Fatalf("second: %v", inv.err)
	}
	s := inv.sum
	if s.Status != policy.RunSuccess || s.Mode != "unchanged" || s.Added+s.Updated+s.Moved+s.Deleted != 0 || s.CommitSHA != head || s.PreviousCommitSHA != head {
		t.Errorf("second summary = %+v", s)
	}
	after := w.state()
	if diff := cmp.Diff(before.policies, after.policies); diff != "" {
		t.Errorf("policies changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(before.queue, after.queue); diff != "" {
		t.Errorf("queue changed (-before +after):\n%s", diff)
	}
	if after.lastCommit != head || after.lastRun.RunID != s.RunID {
		t.Errorf("lastCommit %q lastRun %+v", after.lastCommit, after.lastRun)
	}
	if n := w.gh.Requests().Total(); n != 1 {
		t.Errorf("github requests %d, want 1 (the head)", n)
	}
	if m := inv.metrics(t); len(m) != 1 || m[0]["RunSucceeded"] != 1.0 {
		t.Errorf("an unchanged run still reports a success (the heartbeat alarm reads it): %v", m)
	}
}

func TestLambda_ManualEvents(t *testing.T) {
	t.Parallel()
	t.Run("full dry run writes nothing and reports no metrics", func(t *testing.T) {
		w := newWorld(t)
		seed(w)
		inv := w.invoke(`{"mode":"full","dryRun":true}`, time.Minute)
		if inv.err != nil {
			t.Fatalf("handler: %v", inv.err)
		}
		if s := inv.sum; !s.DryRun || s.Trigger != "manual" || s.Mode != "full" || s.Added != 3 || s.Status != policy.RunSuccess {
			t.Errorf("summary = %+v", s)
		}
		if keys := w.state().keys; len(keys) != 0 {
			t.Errorf("a dry run wrote %v", keys)
		}
		if m := inv.metrics(t); len(m) != 0 {
			t.Errorf("a dry run must not count as a run (it would reset the no-success alarm): %v", m)
		}
		// The result carries the plan, as the CLI's dry run prints it.
		wantItems := map[string]string{
			"학칙":            "규정/제1편/학칙.md",
			"대학원 학칙":        "규정/제1편/대학원 학칙.md",
			"연구소 설치(운영)․규정": "규정/제2편/연구소 설치(운영)․규정.md",
		}
		if inv.plan == nil {
			t.Fatalf("a dry run's result has no plan")
		}
		got := map[string]string{}
		for _, it := range inv.plan.Items {
			if it.Action != policy.ActAdd || it.SHA == "" {
				t.Errorf("plan item %+v, want an add with a sha", it)
			}
			got[it.PolicyName] = it.Path
		}
		if diff := cmp.Diff(wantItems, got); diff != "" {
			t.Errorf("plan items (-want +got):\n%s", diff)
		}
		// The summary's fields stay at the top level of the JSON result,
		// next to the plan.
		res, err := json.Marshal(lambda.Result{RunSummary: inv.sum, Plan: inv.plan})
		if err != nil {
			t.Fatal(err)
		}
		var flat map[string]any
		if err := json.Unmarshal(res, &flat); err != nil {
			t.Fatal(err)
		}
		if flat["added"] != 3.0 || flat["mode"] != "full" || flat["dryRun"] != true || flat["runId"] != inv.sum.RunID {
			t.Errorf("result JSON is not the flat summary: %s", res)
		}
		if items, _ := flat["plan"].(map[string]any)["items"].([]any); len(items) != 3 {
			t.Errorf("result JSON plan items = %v, want 3", flat["plan"])
		}
		logged, _ := inv.line(t, "dry-run plan")["items"].([]any)
		if len(logged) != 3 {
			t.Fatalf("dry-run plan line has %d items, want 3:\n%s", len(logged), inv.logs)
		}
		for _, x := range logged {
			it, _ := x.(map[string]any)
			if name, _ := it["policyName"].(string); wantItems[name] == "" || it["path"] != wantItems[name] || it["action"] != "add" {
				t.Errorf("dry-run plan line item %v", x)
			}
		}
	})
	t.Run("a real run returns no plan and logs none", func(t *testing.T) {
		w := newWorld(t)
		seed(w)
		inv := w.invoke(`{"mode":"full"}`, time.Minute)
		if inv.err != nil {
			t.Fatalf("handler: %v", inv.err)
		}
		if inv.plan != nil {
			t.Errorf("a run that writes returned a plan: %+v", inv.plan)
		}
		res, err := json.Marshal(lambda.Result{RunSummary: inv.sum})
		if err != nil {
			t.Fatal(err)
		}
		var flat map[string]any
		if err := json.Unmarshal(res, &flat); err != nil {
			t.Fatal(err)
		}
		if _, ok := flat["plan"]; ok {
			t.Errorf("result JSON has a plan: %s", res)
		}
		for _, m := range inv.lines(t) {
			if m["msg"] == "dry-run plan" {
				t.Errorf("a run that writes logged a dry-run plan: %v", m)
			}
		}
	})
	t.Run("full backfill after an incremental history", func(t *testing.T) {
		w := newWorld(t)
		seed(w)
		if inv := w.invoke(`{}`, time.Minute); inv.err != nil || inv.sum.Trigger != "manual" || inv.sum.Mode != "full" {
			t.Fatalf("first run: %v %+v", inv.err, inv.sum)
		}
		w.repo.Write("규정/새 규정.md", "# 새 규정\n")
		w.repo.Commit("add")
		if inv := w.invoke(`{"trigger":"manual","mode":"incremental","dryRun":false}`, time.Minute); inv.err != nil || inv.sum.Mode != "incremental" || inv.sum.Added != 1 {
			t.Fatalf("incremental: %v %+v", inv.err, inv.sum)
		}
		inv := w.invoke(`{"mode":"full"}`, time.Minute)
		if inv.err != nil || inv.sum.Mode != "full" || inv.sum.ModeReason != "requested" || inv.sum.Unchanged != 4 || inv.sum.Added != 0 {
			t.Errorf("full: %v %+v", inv.err, inv.sum)
		}
	})
	t.Run("a mass delete is refused unless the event allows it", func(t *testing.T) {
		w := newWorld(t)
		seed(w)
		if inv := w.invoke(`{}`, time.Minute); inv.err != nil {
			t.Fatal(inv.err)
		}
		w.repo.Remove("규정")
		w.repo.Commit("empty the tree")
		// refused in the Lambda's terms: the payload's field, not a CLI flag
		if inv := w.invoke(`{"trigger":"schedule"}`, time.Minute); inv.err == nil || !strings.Contains(inv.err.Error(), "mass-delete") ||
			!strings.Contains(inv.err.Error(), `{"allowMassDelete": true}`) || strings.Contains(inv.err.Error(), "--allow-mass-delete") {
			t.Fatalf("scheduled run deleting everything: %v", inv.err)
		}
		if len(w.state().policies) != 3 {
			t.Fatal("refused plan wrote")
		}
		// A dry run of the refused plan answered its question: a result
		// with status refused and the reason, not a Lambda error (the
		// errors alarm would fire); its log line shows what the plan
		// would delete.
		dry := w.invoke(`{"dryRun":true}`, time.Minute)
		if dry.err != nil || dry.sum.Status != "refused" || !strings.Contains(dry.sum.Error, "mass-delete") || !strings.Contains(dry.sum.Error, `{"allowMassDelete": true}`) {
			t.Fatalf("dry run of the refused plan: %v, status %q, error %q", dry.err, dry.sum.Status, dry.sum.Error)
		}
		if items, _ := dry.line(t, "dry-run plan")["items"].([]any); len(items) != 3 || items[0].(map[string]any)["action"] != "delete" {
			t.Errorf("dry-run plan line items = %v, want the 3 deletes", items)
		}
		if inv := w.invoke(`{"allowMassDelete":true}`, time.Minute); inv.err != nil || inv.sum.Deleted != 3 {
			t.Errorf("allowed: %v %+v", inv.err, inv.sum)
		}
	})
	t.Run("empty and null payloads are manual runs", func(t *testing.T) {
		for _, p := range []string{``, `null`, ` {} `} {
			opt, err := lambda.ParseEvent([]byte(p))
			if err != nil || opt.Trigger != "manual" || opt.Full || opt.DryRun {
				t.Errorf("%q: %+v, %v", p, opt, err)
			}
		}
	})
}

func TestLambda_BadConfig_ErrorNamesTheSetting(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	delete(w.env, "GITHUB_REPO")
	inv := w.invoke(`{"trigger":"schedule"}`, time.Minute)
	var ce *policy.ConfigError
	if !errors.As(inv.err, &ce) || ce.Setting != "GITHUB_REPO" {
		t.Fatalf("err = %v, want a ConfigError naming GITHUB_REPO", inv.err)
	}
	inv.line(t, "invocation rejected")
}

func TestLambda_FailedRun_ReturnsErrorAndIsRecorded(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.gh.FailNext(githubtest.AnyKind, -1, githubtest.ServerError(502))
	inv := w.invoke(`{"trigger":"schedule"}`, time.Minute)
	var re *lambda.RunError
	if !errors.As(inv.err, &re) || re.Status != policy.RunFailed || re.RunID == "" || !strings.Contains(re.Error(), re.RunID) {
		t.Fatalf("err = %v (%T), want a RunError naming the run", inv.err, inv.err)
	}
	st := w.state()
	if st.lastRun == nil || st.lastRun.Status != policy.RunFailed || st.lastRun.RunID != re.RunID || st.lastCommit != "" {
		t.Errorf("lastRun %+v, lastCommit %q", st.lastRun, st.lastCommit)
	}
	m := inv.metrics(t)
	if len(m) != 1 || m[0]["RunFailed"] != 1.0 || m[0]["RunSucceeded"] != 0.0 || m[0]["status"] != "failed" {
		t.Errorf("EMF = %v", m)
	}
	if fin := inv.line(t, "invocation finished"); fin["level"] != "ERROR" {
		t.Errorf("invocation finished = %v", fin)
	}
}

func TestLambda_ShortDeadline_EndsCleanlyWithRunRecorded(t *testing.T) {
	w := newWorld(t)
	first := seed(w)
	if inv := w.invoke(`{"trigger":"schedule"}`, time.Minute); inv.err != nil {
		t.Fatalf("first run: %v", inv.err)
	}
	w.repo.Write("규정/새 규정.md", "# 새 규정\n")
	second := w.repo.Commit("add")
	// Reading the new file hangs until the client gives up: only the
	// deadline ends this run.
	w.gh.FailNext(githubtest.KindBlob, -1, githubtest.Hang())
	w.gh.FailNext(githubtest.KindArchive, -1, githubtest.Hang())

	h := w.lambdaHandler(new(bytes.Buffer))
	h.Reserve = 2 * time.Second
	const timeout = 3 * time.Second
	began := time.Now()
	inv := w.invokeWith(h, `{"trigger":"schedule"}`, timeout)
	if took := time.Since(began); took >= timeout {
		t.Errorf("the handler returned after %v, past the Lambda deadline of %v", took, timeout)
	}
	var re *lambda.RunError
	if !errors.As(inv.err, &re) || !strings.Contains(re.Error(), "before the Lambda function's timeout") {
		t.Fatalf("err = %v, want a RunError that says the run stopped for the deadline", inv.err)
	}
	st := w.state()
	if st.lastRun == nil || st.lastRun.Status != policy.RunFailed || st.lastRun.CommitSHA != second || st.lastRun.RunID != re.RunID {
		t.Errorf("lastRun = %+v, want failed at %s", st.lastRun, second)
	}
	if st.lastCommit != first {
		t.Errorf("lastCommit %s, want it left at %s", st.lastCommit, first)
	}
	if _, ok := st.policies["새 규정"]; ok {
		t.Errorf("the unread policy was written")
	}
	if m := inv.metrics(t); len(m) != 1 || m[0]["RunFailed"] != 1.0 {
		t.Errorf("EMF = %v", m)
	}

	// The next run, with time, finishes the job.
	w.gh.ClearFaults()
	inv = w.invoke(`{"trigger":"schedule"}`, time.Minute)
	if inv.err != nil || inv.sum.Added != 1 {
		t.Fatalf("next run: %v %+v", inv.err, inv.sum)
	}
	if st := w.state(); st.lastCommit != second {
		t.Errorf("lastCommit %s, want %s", st.lastCommit, second)
	}
}

func TestLambda_DeadlineInsideReserve_RunFailsAtOnceAndIsRecorded(t *testing.T) {
	w := newWorld(t)
	seed(w)
	inv := w.invoke(`{"trigger":"schedule"}`, lambda.Reserve/2)
	var re *lambda.RunError
	if !errors.As(inv.err, &re) {
		t.Fatalf("err = %v, want a RunError", inv.err)
	}
	if st := w.state(); st.lastRun == nil || st.lastRun.Status != policy.RunFailed || st.lastCommit != "" {
		t.Errorf("lastRun %+v lastCommit %q", st.lastRun, st.lastCommit)
	}
}

func TestLambda_HandlerKeepsNoStateBetweenInvocations(t *testing.T) {
	t.Parallel()
	// A warm Lambda environment reuses the handler: two invocations of one
	// handler behave as two cold ones.
	w := newWorld(t)
	seed(w)
	h := w.lambdaHandler(new(bytes.Buffer))
	a := w.invokeWith(h, `{"trigger":"schedule"}`, time.Minute)
	w.repo.Write("규정/새 규정.md", "# 새 규정\n")
	w.repo.Commit("add")
	b := w.invokeWith(h, `{"trigger":"schedule"}`, time.Minute)
	if a.err != nil || b.err != nil || a.sum.RunID == b.sum.RunID || b.sum.Mode != "incremental" || b.sum.Added != 1 {
		t.Errorf("first %v %+v\nsecond %v %+v", a.err, a.sum, b.err, b.sum)
	}
	if strings.Contains(b.logs, a.sum.RunID) {
		t.Errorf("the second invocation's logs mention the first run")
	}
	if gh := b.sum.Requests["github"]; gh > 4 {
		t.Errorf("second run counts %d GitHub requests: counters carried over?", gh)
	}
}

func TestLambda_PartialRun_ReturnsSummaryAndCountsPartial(t *testing.T) {
	t.Parallel()
	// Failed items are queued for the next run; an immediate Lambda retry
	// would not help them, so a partial run is not an invocation error. The
	// RunPartial metric (and its alarm) reports it.
	w := newWorld(t)
	head := seed(w)
	failSeededBlobs(w, head, githubtest.ServerError(500))
	inv := w.invoke(`{"trigger":"schedule"}`, time.Minute)
	if inv.err != nil {
		t.Fatalf("err = %v, want the summary", inv.err)
	}
	if inv.sum.Status != policy.RunPartial || inv.sum.ErrorCount != 3 || len(inv.sum.Failures) != 3 {
		t.Errorf("summary = %+v", inv.sum)
	}
	m := inv.metrics(t)
	if len(m) != 1 || m[0]["RunPartial"] != 1.0 || m[0]["Failed"] != 3.0 || m[0]["RunSucceeded"] != 0.0 {
		t.Errorf("EMF = %v", m)
	}
}

// failSeededBlobs makes the three seeded policies unreadable with fault and
// adds a fourth that can be read: a run in which every read fails is an
// outage, not three item failures.
func failSeededBlobs(w *world, head string, fault githubtest.Fault) {
	for _, p := range []string{"규정/제1편/학칙.md", "규정/제1편/대학원 학칙.md", "규정/제2편/연구소 설치(운영)․규정.md"} {
		w.gh.FailWithin(githubtest.KindBlob, w.repo.BlobSHA(head, p), fault)
	}
	w.repo.Write("규정/제3편/readable.md", "# readable\n")
	w.repo.Commit("a policy GitHub can serve")
}
