package webhook_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/knue/syncjob/internal/webhook"
)

const (
	testSecret   = "whsec-0123456789"
	testDelivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
	testAfter    = "1111111111111111111111111111111111111111"
)

var target = webhook.Target{Repo: "knue/policies", Branch: "main"}

func pushBody(repo, ref, after string, deleted bool) string {
	d := "false"
	if deleted {
		d = "true"
	}
	return `{"ref":"` + ref + `","before":"2222222222222222222222222222222222222222","after":"` + after +
		`","deleted":` + d + `,"repository":{"full_name":"` + repo + `"},"commits":[]}`
}

// signed is a delivery as GitHub sends it through a Function URL: header
// names lower-cased.
func signed(event, body string) webhook.Request {
	return webhook.Request{
		Method: http.MethodPost,
		Headers: map[string]string{
			"content-type":        "application/json",
			"x-github-event":      event,
			"x-github-delivery":   testDelivery,
			"x-hub-signature-256": webhook.Sign([]byte(testSecret), []byte(body)),
		},
		Body: body,
	}
}

func secret() ([]byte, error) { return []byte(testSecret), nil }

func TestReceive_EachDeliveryGetsItsAnswer(t *testing.T) {
	push := pushBody("knue/policies", "refs/heads/main", testAfter, false)
	big := strings.Repeat("x", webhook.MaxBody+1)
	b64 := signed("push", push)
	b64.Body, b64.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(push)), true

	for _, tc := range []struct {
		name   string
		req    webhook.Request
		kind   webhook.Kind
		status int
		reason string
	}{
		{"push to the branch", signed("push", push), webhook.Sync, 202, "sync of " + testAfter},
		{"push, base64 body", b64, webhook.Sync, 202, "sync of"},
		{"push, repository in another case", signed("push", pushBody("KNUE/Policies", "refs/heads/main", testAfter, false)), webhook.Sync, 202, ""},
		{"ping", signed("ping", `{"zen":"Keep it logically awesome.","hook_id":1}`), webhook.Ping, 200, "pong"},
		{"other event", signed("issues", `{"action":"opened"}`), webhook.Ignored, 202, `"issues" is not push`},
		{"no event header", with(signed("", push), "x-github-event", ""), webhook.Ignored, 202, "is not push"},
		{"other repository", signed("push", pushBody("knue/other", "refs/heads/main", testAfter, false)), webhook.Ignored, 202, "knue/other"},
		{"other branch", signed("push", pushBody("knue/policies", "refs/heads/dev", testAfter, false)), webhook.Ignored, 202, "refs/heads/dev"},
		{"branch name in another case", signed("push", pushBody("knue/policies", "refs/heads/Main", testAfter, false)), webhook.Ignored, 202, "refs/heads/Main"},
		{"a tag", signed("push", pushBody("knue/policies", "refs/tags/main", testAfter, false)), webhook.Ignored, 202, "refs/tags/main"},
		{"branch deleted", signed("push", pushBody("knue/policies", "refs/heads/main", strings.Repeat("0", 40), true)), webhook.Ignored, 202, "deletes"},
		{"branch deleted, only after zeros", signed("push", pushBody("knue/policies", "refs/heads/main", strings.Repeat("0", 40), false)), webhook.Ignored, 202, "deletes"},
		{"push without after", signed("push", pushBody("knue/policies", "refs/heads/main", "", false)), webhook.Invalid, 400, "after"},
		{"push without delivery id", with(signed("push", push), "x-github-delivery", ""), webhook.Invalid, 400, "X-GitHub-Delivery"},
		{"push with a delivery id too long to record", with(signed("push", push), "x-github-delivery", strings.Repeat("d", webhook.MaxDeliveryLen+1)), webhook.Invalid, 400, "longer than"},
		{"push not JSON", signed("push", "payload=%7B%7D"), webhook.Invalid, 400, "not the expected JSON"},
		{"push as a form", with(signed("push", "payload=%7B%7D"), "content-type", "application/x-www-form-urlencoded"), webhook.Invalid, 415, "application/json"},
		{"no signature", with(signed("push", push), "x-hub-signature-256", ""), webhook.Rejected, 401, "signature missing or wrong"},
		{"sha1 only", with(with(signed("push", push), "x-hub-signature-256", ""), "x-hub-signature", "sha1=0123456789abcdef0123456789abcdef01234567"), webhook.Rejected, 401, "sha1"},
		{"wrong secret", with(signed("push", push), "x-hub-signature-256", webhook.Sign([]byte("guess"), []byte(push))), webhook.Rejected, 401, ""},
		{"signature of another body", with(signed("push", push), "x-hub-signature-256", webhook.Sign([]byte(testSecret), []byte(pushBody("knue/policies", "refs/heads/dev", testAfter, false)))), webhook.Rejected, 401, ""},
		{"base64 body signed as text", with(b64, "x-hub-signature-256", webhook.Sign([]byte(testSecret), []byte(b64.Body))), webhook.Rejected, 401, ""},
		{"header names as sent", webhook.Request{Method: "POST", Headers: map[string]string{"X-GitHub-Event": "push", "X-GitHub-Delivery": testDelivery, "X-Hub-Signature-256": webhook.Sign([]byte(testSecret), []byte(push))}, Body: push}, webhook.Sync, 202, ""},
		{"oversized", signed("push", big), webhook.Refused, 413, "body over"},
		{"oversized once decoded", func() webhook.Request {
			r := signed("push", "")
			r.Body, r.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(big))[:base64.StdEncoding.EncodedLen(webhook.MaxBody)], true
			return r
		}(), webhook.Refused, 413, ""},
		{"GET", func() webhook.Request { r := signed("push", push); r.Method = http.MethodGet; return r }(), webhook.Refused, 405, "POST"},
		{"bad base64", func() webhook.Request { r := signed("push", push); r.IsBase64Encoded = true; return r }(), webhook.Refused, 400, "base64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := webhook.Receive(tc.req, secret, target)
			if o.Kind != tc.kind || o.Status != tc.status || !strings.Contains(o.Reason, tc.reason) {
				t.Errorf("outcome %s %d %q (err %v), want %s %d containing %q", o.Kind, o.Status, o.Reason, o.Err, tc.kind, tc.status, tc.reason)
			}
			if o.Kind == webhook.Sync && (o.Push == nil || o.Push.After != testAfter || o.Delivery != testDelivery) {
				t.Errorf("sync outcome without the push: %+v", o)
			}
			if strings.Contains(o.Reason, testSecret) {
				t.Errorf("reason quotes the secret: %q", o.Reason)
			}
		})
	}
}

func with(r webhook.Request, header, value string) webhook.Request {
	h := map[string]string{}
	for k, v := range r.Headers {
		h[k] = v
	}
	if value == "" {
		delete(h, header)
	} else {
		h[header] = value
	}
	r.Headers = h
	return r
}

func TestReceive_SecretIsReadOnlyForARequestWorthVerifying(t *testing.T) {
	calls := 0
	count := func() ([]byte, error) { calls++; return []byte(testSecret), nil }
	get := signed("push", "{}")
	get.Method = http.MethodGet
	webhook.Receive(get, count, target)
	webhook.Receive(signed("push", strings.Repeat("x", webhook.MaxBody+1)), count, target)
	if calls != 0 {
		t.Errorf("secret read %d times for refused requests", calls)
	}
	webhook.Receive(signed("ping", "{}"), count, target)
	if calls != 1 {
		t.Errorf("secret read %d times for one delivery, want 1", calls)
	}
}

func TestReceive_SecretUnavailable_Fails500(t *testing.T) {
	boom := errors.New("secrets extension: get arn: status 400")
	o := webhook.Receive(signed("push", "{}"), func() ([]byte, error) { return nil, boom }, target)
	if o.Kind != webhook.Failed || o.Status != 500 || !errors.Is(o.Err, boom) {
		t.Errorf("outcome %+v", o)
	}
	o = webhook.Receive(signed("push", "{}"), func() ([]byte, error) { return nil, nil }, target)
	if o.Kind != webhook.Failed || !errors.Is(o.Err, webhook.ErrNoSecret) {
		t.Errorf("an empty secret must never verify anything: %+v", o)
	}
}

func TestReceive_UnverifiedHeadersAreCutForTheLog(t *testing.T) {
	r := with(signed("push", "{}"), "x-github-delivery", strings.Repeat("d", 5000))
	r = with(r, "x-hub-signature-256", "")
	o := webhook.Receive(r, secret, target)
	if o.Kind != webhook.Rejected || len(o.Delivery) > 104 {
		t.Errorf("outcome %s, delivery of %d bytes", o.Kind, len(o.Delivery))
	}
}

func FuzzReceive_NothingUnsignedGetsThrough(f *testing.F) {
	f.Add("POST", "push", pushBody("knue/policies", "refs/heads/main", testAfter, false), "", false)
	f.Add("POST", "ping", "{}", "sha256=00", true)
	f.Fuzz(func(t *testing.T, method, event, body, signature string, b64 bool) {
		r := webhook.Request{Method: method, Body: body, IsBase64Encoded: b64, Headers: map[string]string{
			"x-github-event": event, "x-github-delivery": testDelivery, "x-hub-signature-256": signature,
		}}
		o := webhook.Receive(r, secret, target)
		if o.Status == 0 || o.Reason == "" {
			t.Fatalf("no answer: %+v", o)
		}
		raw := []byte(body)
		if b64 {
			var err error
			if raw, err = base64.StdEncoding.DecodeString(body); err != nil {
				raw = nil
			}
		}
		signedRight := raw != nil && webhook.Verify([]byte(testSecret), raw, signature) == nil
		switch o.Kind {
		case webhook.Ping, webhook.Ignored, webhook.Invalid, webhook.Sync:
			if !signedRight {
				t.Fatalf("%s outcome for a request not signed with the secret: %+v", o.Kind, o)
			}
		}
	})
}

// TestReceive_UnsignedDeliveryHeader_SanitizedBeforeStoredOrLogged: the
// X-GitHub-Delivery header is not covered by the signature; what the
// receiver keeps of it (to log, and to hand on to the run that records
// it) has no control or invisible characters and is valid UTF-8 cut at a
// character boundary.
func TestReceive_UnsignedDeliveryHeader_SanitizedBeforeStoredOrLogged(t *testing.T) {
	push := pushBody("knue/policies", "refs/heads/main", testAfter, false)
	for _, tc := range []struct{ header, want string }{
		{"72d3162e\x1b[31m-cc78\r\nfake: line\x00\x7f\u0085", "72d3162e[31m-cc78fake: line"},
		{"\u202e72d3\u2066162e\u200b\u2028\ufeff\u061c", "72d3162e"},
		{"bad\xffutf8", "bad\ufffdutf8"},
		{strings.Repeat("가", 40), strings.Repeat("가", 33) + "…"},
	} {
		o := webhook.Receive(with(signed("push", push), "x-github-delivery", tc.header), secret, target)
		if o.Delivery != tc.want {
			t.Errorf("delivery %q kept as %q, want %q", tc.header, o.Delivery, tc.want)
		}
		if !utf8.ValidString(o.Delivery) {
			t.Errorf("delivery %q kept as invalid UTF-8 %q", tc.header, o.Delivery)
		}
	}
}
