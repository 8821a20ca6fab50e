package lambda

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/policy"
)

// lambdaMaxResponse is Lambda's limit on a synchronous invocation's
// response: a larger one fails the invocation (Function.ResponseSizeTooLarge;
// aws-lambda-go's runtime loop exits when the Runtime API refuses it).
const lambdaMaxResponse = 6 << 20

// mustPlan is a plan of n adds named as a university's regulations are.
func mustPlan(t *testing.T, n int) policy.Plan {
	t.Helper()
	plan := policy.Plan{Items: make([]policy.Item, 0, n), Skipped: []policy.Skip{}, Conflicts: []policy.Conflict{}}
	for i := range n {
		name := fmt.Sprintf("학칙 시행세칙 제%05d호", i)
		plan.Items = append(plan.Items, policy.Item{
			Action: policy.ActAdd, PolicyName: name, Path: "규정/제" + fmt.Sprint(i%9) + "편/" + name + ".md",
			SHA: strings.Repeat("a", 40), Title: name + " (개정)",
		})
	}
	return plan
}

// A dry run by hand ({"mode":"full","dryRun":true}, the documented way to
// preview a backfill) of a first sync of a repository of the sizes the
// README reports (50,000 policies) plans one item each: the whole plan
// would pass Lambda's 6 MB, and the invocation would fail with no answer.
// The result lists the first items, and says how many it leaves out and
// where the whole plan is.
func TestResult_DryRunOf50000Policies_FitsLambdasResponseLimit(t *testing.T) {
	t.Parallel()
	const n = 50000
	plan := mustPlan(t, n)
	b, err := marshalResult(Result{RunSummary: policy.RunSummary{DryRun: true, Added: n}, Plan: &plan})
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > lambdaMaxResponse {
		t.Errorf("dry-run result of %d items is %d bytes, over Lambda's %d: the invocation fails instead of answering", n, len(b), lambdaMaxResponse)
	}
	var got Result
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("result is not JSON: %v", err)
	}
	if got.Added != n || got.Plan == nil || len(got.Plan.Items) != MaxResultList || got.Plan.Items[0].PolicyName != plan.Items[0].PolicyName {
		t.Fatalf("result: added %d, plan %v", got.Added, got.Plan != nil)
	}
	if got.Truncated == nil || !strings.Contains(got.Truncated.Full, "syncjob sync --dry-run") {
		t.Fatalf("truncated = %+v, want where the whole plan is", got.Truncated)
	}
	if diff := cmp.Diff(map[string]int{"plan.items": n - MaxResultList}, got.Truncated.Omitted); diff != "" {
		t.Errorf("omitted (-want +got):\n%s", diff)
	}
}

// The summary's lists are cut too (a run whose every write failed), and a
// list whose first entries are larger than usual is cut shorter, so that
// the result still fits.
func TestResult_LongListsAndLargeEntries_FitLambdasResponseLimit(t *testing.T) {
	t.Parallel()
	const n = 30000
	sum := policy.RunSummary{RunID: "run-1", Status: policy.RunPartial, ErrorCount: n, Pending: []string{}}
	long := "registry: put: " + strings.Repeat("x", 8<<10) // 1,000 of them pass 6 MB
	for i := range n {
		name := fmt.Sprintf("학칙 제%05d호", i)
		sum.Failures = append(sum.Failures, policy.Failure{PolicyName: name, Error: long})
		sum.Pending = append(sum.Pending, name)
	}
	b, err := marshalResult(Result{RunSummary: sum})
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > lambdaMaxResponse {
		t.Errorf("result of %d failures is %d bytes, over Lambda's %d", n, len(b), lambdaMaxResponse)
	}
	var got Result
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("result is not JSON: %v", err)
	}
	if got.ErrorCount != n || got.Truncated == nil || got.Truncated.Omitted["failures"]+len(got.Failures) != n ||
		got.Truncated.Omitted["pending"]+len(got.Pending) != n || !strings.Contains(got.Truncated.Full, "syncjob runs show run-1") {
		t.Errorf("errorCount %d, %d failures and %d pending listed, truncated %+v", got.ErrorCount, len(got.Failures), len(got.Pending), got.Truncated)
	}
}

// A result that fits is encoded whole, as before: no truncated field,
// pending absent (null, unknown) stays null, and "<" is not escaped.
func TestResult_Small_EncodedWhole(t *testing.T) {
	t.Parallel()
	plan := mustPlan(t, 3)
	plan.Items[0].Title = "학칙 <개정>"
	b, err := marshalResult(Result{RunSummary: policy.RunSummary{DryRun: true, Added: 3, Skipped: []policy.Skip{}, Conflicts: []policy.Conflict{}}, Plan: &plan})
	if err != nil {
		t.Fatal(err)
	}
	var flat map[string]any
	if err := json.Unmarshal(b, &flat); err != nil {
		t.Fatal(err)
	}
	if _, ok := flat["truncated"]; ok {
		t.Errorf("a small result says truncated: %s", b)
	}
	if p, ok := flat["pending"]; !ok || p != nil {
		t.Errorf("pending = %v (present %v), want null", p, ok)
	}
	if items, _ := flat["plan"].(map[string]any)["items"].([]any); len(items) != 3 {
		t.Errorf("plan items %v, want 3", flat["plan"])
	}
	if !strings.Contains(string(b), "학칙 <개정>") {
		t.Errorf("the title is escaped: %.300s", b)
	}
}

// The log holds a dry run's whole plan, which the result cuts, in lines
// CloudWatch Logs takes whole (events of at most 256 KB).
func TestLogPlan_50000Items_LinesUnderCloudWatchsEventLimit(t *testing.T) {
	t.Parallel()
	const n, cloudWatchMaxEvent = 50000, 256 << 10
	plan := mustPlan(t, n)
	plan.Skipped = []policy.Skip{{Path: "규정/README.txt", Reason: "not markdown"}}
	var logs strings.Builder
	logPlan(slog.New(slog.NewJSONHandler(&logs, nil)), "run-1", plan)
	var items []string
	lines := strings.Split(strings.TrimSuffix(logs.String(), "\n"), "\n")
	for i, line := range lines {
		if len(line) > cloudWatchMaxEvent {
			t.Fatalf("line %d is %d bytes, over CloudWatch's %d", i+1, len(line), cloudWatchMaxEvent)
		}
		var m struct {
			Msg         string
			Part, Parts int
			Items       []policy.Item
			Skipped     []policy.Skip
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		if m.Msg != "dry-run plan" || m.Part != i+1 || m.Parts != len(lines) {
			t.Fatalf("line %d: %q part %d of %d, want of %d", i+1, m.Msg, m.Part, m.Parts, len(lines))
		}
		for _, it := range m.Items {
			items = append(items, it.PolicyName)
		}
		if len(m.Skipped) > 0 && i != len(lines)-1 {
			t.Errorf("skipped files on line %d of %d, want after the items", i+1, len(lines))
		}
	}
	if len(items) != n || items[0] != plan.Items[0].PolicyName || items[n-1] != plan.Items[n-1].PolicyName {
		t.Errorf("%d items logged over %d lines, want %d in order", len(items), len(lines), n)
	}
}

// TestLambdaTerms_RewindRefusal_NamesTheCLI: a rewind or retarget refusal
// in the Lambda's error names the way past it the function has not: the
// CLI's --allow-rewind, once, not ALLOW_REWIND=yes, which the function
// does not read (a reviewer's note).
func TestLambdaTerms_RewindRefusal_NamesTheCLI(t *testing.T) {
	t.Parallel()
	msg := "refused: rewind or retarget: the registry was synced from knue/policies branch main, not knue/policies branch draft (--allow-rewind or ALLOW_REWIND=yes to sync it from here)"
	got := lambdaTerms(msg)
	if strings.Contains(got, "ALLOW_REWIND=yes") || !strings.Contains(got, "syncjob sync --allow-rewind, run once from the CLI, to sync it from here") {
		t.Errorf("lambdaTerms(%q) = %q", msg, got)
	}
	if got := lambdaTerms("refused: the plan loses 15 of 60 policies; run with --allow-mass-delete=15 if that is meant"); !strings.Contains(got, `invoke with {"allowMassDelete": true} in the payload`) {
		t.Errorf("the mass-delete guard's way past: %q", got)
	}
}
