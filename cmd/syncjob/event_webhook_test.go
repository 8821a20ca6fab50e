package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/syncer"
)

const (
	testDelivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
	testSHA      = "0123456789abcdef0123456789abcdef01234567"
)

func TestEvent_Webhook_ParsesToAnIncrementalRunWithItsDelivery(t *testing.T) {
	b, err := json.Marshal(webhookEvent{Trigger: triggerWebhook, After: testSHA, Delivery: testDelivery})
	if err != nil {
		t.Fatal(err)
	}
	opt, err := parseEvent(b)
	if err != nil {
		t.Fatalf("the receiver's payload %s is refused: %v", b, err)
	}
	want := syncer.Options{Trigger: syncer.TriggerWebhook, Delivery: testDelivery, After: testSHA}
	if diff := cmp.Diff(want, opt); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
}

func TestEvent_Webhook_FieldsAreChecked(t *testing.T) {
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
		{`{"trigger":"webhook","after":"` + testSHA + `","delivery":"d","ref":"refs/heads/main"}`, "ref", "unknown field"},
	} {
		t.Run(tc.payload, func(t *testing.T) {
			_, err := parseEvent([]byte(tc.payload))
			var ee *EventError
			if !errors.As(err, &ee) || ee.Field != tc.field || !strings.Contains(ee.Error(), tc.words) {
				t.Errorf("err = %v, want an EventError on %s saying %q", err, tc.field, tc.words)
			}
		})
	}
}

func TestLambda_WebhookEvent_IncrementalRunCarriesTheDelivery(t *testing.T) {
	w := newWorld(t)
	seed(w)
	if inv := w.invoke(`{"trigger":"schedule"}`, time.Minute); inv.err != nil {
		t.Fatalf("first run: %v", inv.err)
	}
	w.repo.Write("규정/새 규정.md", "# 새 규정\n")
	head := w.repo.Commit("add")

	payload := `{"trigger":"webhook","after":"` + head + `","delivery":"` + testDelivery + `"}`
	inv := w.invoke(payload, time.Minute)
	if inv.err != nil {
		t.Fatalf("webhook run: %v\n%s", inv.err, inv.logs)
	}
	if s := inv.sum; s.Trigger != "webhook" || s.Delivery != testDelivery || s.Mode != "incremental" || s.Added != 1 || s.CommitSHA != head || s.Status != policy.RunSuccess {
		t.Errorf("summary = %+v", s)
	}
	st := w.state()
	if st.lastCommit != head || st.lastRun == nil || st.lastRun.Delivery != testDelivery || st.lastRun.Trigger != "webhook" {
		t.Errorf("registry: lastCommit %q, lastRun %+v", st.lastCommit, st.lastRun)
	}
	if fin := inv.line(t, "run finished"); fin["delivery"] != testDelivery || fin["trigger"] != "webhook" {
		t.Errorf("run finished = %v, want the delivery and the trigger", fin)
	}

	// GitHub redelivers, or a second push names a commit already synced:
	// the one-request unchanged run.
	w.gh.ResetRequests()
	again := w.invoke(payload, time.Minute)
	if again.err != nil || again.sum.Mode != "unchanged" || again.sum.Delivery != testDelivery {
		t.Errorf("redelivery: %v %+v", again.err, again.sum)
	}
	if n := w.gh.Requests().Total(); n != 1 {
		t.Errorf("an unchanged webhook run made %d GitHub requests, want 1 (the head)", n)
	}
}

func TestLambda_WebhookEvent_DoesNotReconcile(t *testing.T) {
	// The daily schedule reconciles; a webhook run a day after the last
	// full run stays incremental.
	w := newWorld(t)
	seed(w)
	if inv := w.invoke(`{"trigger":"schedule"}`, time.Minute); inv.err != nil {
		t.Fatal(inv.err)
	}
	w.now = w.now.Add(48 * time.Hour)
	w.repo.Write("규정/새 규정.md", "# 새 규정\n")
	head := w.repo.Commit("add")
	inv := w.invoke(`{"trigger":"webhook","after":"`+head+`","delivery":"`+testDelivery+`"}`, time.Minute)
	if inv.err != nil || inv.sum.Mode != "incremental" {
		t.Errorf("webhook run two days after the reconcile: %v mode %q (%s)", inv.err, inv.sum.Mode, inv.sum.ModeReason)
	}
}
