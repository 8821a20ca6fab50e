package lambda_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/lambda"
	"github.com/knue/syncjob/internal/syncer"
)

const (
	testDelivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
	testSHA      = "0123456789abcdef0123456789abcdef01234567"
)

func TestEvent_Webhook_ParsesToAnIncrementalRunWithItsDelivery(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(lambda.WebhookEvent{Trigger: lambda.TriggerWebhook, After: testSHA, Delivery: testDelivery})
	if err != nil {
		t.Fatal(err)
	}
	opt, err := lambda.ParseEvent(b)
	if err != nil {
		t.Fatalf("the receiver's payload %s is refused: %v", b, err)
	}
	want := syncer.Options{Trigger: syncer.TriggerWebhook, Delivery: testDelivery, After: testSHA}
	if diff := cmp.Diff(want, opt); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
}

// A forced push's payload makes a run that knows it (syncer.Options.Forced).
func TestEvent_Webhook_ForcedPush_RunKnowsIt(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(lambda.WebhookEvent{Trigger: lambda.TriggerWebhook, After: testSHA, Delivery: testDelivery, Forced: true})
	if err != nil {
		t.Fatal(err)
	}
	opt, err := lambda.ParseEvent(b)
	if err != nil || !opt.Forced || opt.After != testSHA {
		t.Errorf("payload %s: %+v, %v; want a webhook run that knows the push was forced", b, opt, err)
	}
	before := strings.Repeat("b", 40)
	b, _ = json.Marshal(lambda.WebhookEvent{Trigger: lambda.TriggerWebhook, After: testSHA, Delivery: testDelivery, Forced: true, Before: before})
	if opt, err := lambda.ParseEvent(b); err != nil || opt.Before != before {
		t.Errorf("payload %s: %+v, %v; want a run that knows the branch's commit before the forced push", b, opt, err)
	}
}

func TestEvent_Webhook_FieldsAreChecked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		payload, field, words string
	}{
		{`{"trigger":"webhook","delivery":"d"}`, "after", "not a commit sha"},
		{`{"trigger":"webhook","after":"abc","delivery":"d"}`, "after", `"abc"`},
		{`{"trigger":"webhook","after":"` + strings.ToUpper(testSHA) + `","delivery":"d"}`, "after", "lower-case"},
		{`{"trigger":"webhook","after":"` + testSHA + `"}`, "delivery", "required"},
		{`{"trigger":"webhook","after":"` + testSHA + `","delivery":"` + strings.Repeat("d", 101) + `"}`, "delivery", "longer"},
		{`{"trigger":"webhook","after":"` + testSHA + `","delivery":"d\u001b[2J\r\nfake line"}`, "delivery", "control or invisible characters"},
		{`{"trigger":"webhook","after":"` + testSHA + `","delivery":"\u202e72d3"}`, "delivery", "control or invisible characters"},
		{`{"trigger":"webhook","after":1,"delivery":"d"}`, "after", "a string"},
		{`{"trigger":"schedule","after":"` + testSHA + `"}`, "after", "only with"},
		{`{"delivery":"d"}`, "delivery", "only with"},
		{`{"trigger":"schedule","forced":true}`, "forced", "only with"},
		{`{"trigger":"webhook","after":"` + testSHA + `","delivery":"d","forced":"yes"}`, "forced", "true or false"},
		{`{"trigger":"schedule","before":"` + testSHA + `"}`, "before", "only with"},
		{`{"trigger":"webhook","after":"` + testSHA + `","delivery":"d","before":"` + testSHA + `"}`, "before", `only with "forced":true`},
		{`{"trigger":"webhook","after":"` + testSHA + `","delivery":"d","forced":true,"before":"HEAD~1"}`, "before", "not a commit sha"},
		{`{"trigger":"webhook","after":"` + testSHA + `","delivery":"d","ref":"refs/heads/main"}`, "ref", "unknown field"},
	} {
		t.Run(tc.payload, func(t *testing.T) {
			_, err := lambda.ParseEvent([]byte(tc.payload))
			var ee *lambda.EventError
			if !errors.As(err, &ee) || ee.Field != tc.field || !strings.Contains(ee.Error(), tc.words) {
				t.Errorf("err = %v, want an EventError on %s saying %q", err, tc.field, tc.words)
			}
		})
	}
}

// A field given twice, or null, is refused: encoding/json keeps the last
// of a name and reads a null as "not given", so {"dryRun":true, …,
// "dryRun":false} ran a real sync (an adversarial helper).
func TestEvent_FieldTwiceOrNull_Refused(t *testing.T) {
	t.Parallel()
	for payload, want := range map[string]string{
		`{"dryRun":true,"mode":"full","dryRun":false}`: "event: dryRun: given twice",
		`{"mode":"full","mode":"incremental"}`:         "event: mode: given twice",
		`{"dryRun":null}`:                              "event: dryRun: null",
		`{"trigger":null}`:                             "event: trigger: null",
		`{"Mode":"full"}`:                              "event: Mode: unknown field",
	} {
		_, err := lambda.ParseEvent([]byte(payload))
		var ee *lambda.EventError
		if !errors.As(err, &ee) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want an EventError %q", payload, err, want)
		}
	}
	if _, err := lambda.ParseEvent([]byte(`{"dryRun":true,"mode":"full"}`)); err != nil {
		t.Errorf("each field once: %v", err)
	}
}

// A refused value (or unknown field name) is quoted at most 100 bytes long:
// a 5 MB value came back whole in the error and one log line.
func TestEvent_HugeRefusedValue_QuotedCut(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 5<<20)
	for _, p := range []string{
		`{"mode":"` + big + `"}`,
		`{"` + big + `":1}`,
		`{"trigger":"webhook","after":"` + big + `","delivery":"d"}`,
	} {
		_, err := lambda.ParseEvent([]byte(p))
		if err == nil || len(err.Error()) > 1000 {
			t.Errorf("payload of %d bytes: error of %d bytes, want a refusal of under 1,000", len(p), len(fmt.Sprint(err)))
		}
	}
}
