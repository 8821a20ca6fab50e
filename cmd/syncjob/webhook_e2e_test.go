package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/knue/syncjob/internal/lambda"
	"github.com/knue/syncjob/internal/policy"
)

// handToSync runs the sync function's handler on an invocation the fake
// Lambda recorded, as Lambda runs a queued asynchronous event.
func (w *world) handToSync(inv recordedInvocation) invocation {
	w.t.Helper()
	if inv.InvocationType != "Event" || inv.Function != testSyncFunction {
		w.t.Fatalf("invocation of %q type %q, want an Event invocation of the sync function", inv.Function, inv.InvocationType)
	}
	return w.invoke(string(inv.Payload), 15*time.Minute) // the template's timeout: time to wait out KV's window
}

func TestWebhook_EndToEnd_SignedPushReachesTheRegistry(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		seed(w)
		if inv := w.invoke(`{"trigger":"schedule"}`, time.Minute); inv.err != nil {
			t.Fatalf("the daily run: %v", inv.err)
		}
		w.repo.Write("규정/제3편/연구윤리 규정.md", "# 연구윤리 규정\n\n"+bodyMarker+"\n")
		after := w.repo.Commit("연구윤리 규정 제정")

		r := newReceiverRig(t)
		a := r.deliver(delivery("push", testDelivery, pushPayload("knue/policies", "refs/heads/main", after), testWebhookSecret))
		if a.resp.StatusCode != 202 {
			t.Fatalf("receiver answered %d %q", a.resp.StatusCode, a.resp.Body)
		}
		got := r.lambda.invocations()
		if len(got) != 1 {
			t.Fatalf("%d invocations, want 1", len(got))
		}
		inv := w.handToSync(got[0])
		if inv.err != nil {
			t.Fatalf("sync: %v\n%s", inv.err, inv.logs)
		}
		st := w.state()
		if st.lastCommit != after {
			t.Errorf("lastCommit %s, want the pushed %s", st.lastCommit, after)
		}
		if st.lastRun == nil || st.lastRun.Delivery != testDelivery || st.lastRun.Trigger != "webhook" || st.lastRun.Mode != "incremental" || st.lastRun.Added != 1 {
			t.Errorf("lastRun = %+v", st.lastRun)
		}
		if e, ok := st.policies["연구윤리 규정"]; !ok || e.Title != "연구윤리 규정" {
			t.Errorf("the pushed policy: %+v (%v)", e, ok)
		}
		for _, m := range inv.lines(t) {
			if _, emf := m["_aws"]; !emf && m["runId"] != nil && m["delivery"] != testDelivery {
				t.Errorf("run line without the delivery id: %v", m)
			}
		}
		assertNoSecretOrBody(t, a.logs.logs)
	})
}

// gateGitHub routes the program's GitHub requests through a proxy that,
// once armed, holds the next request until released: a run is then going.
func (w *world) gateGitHub() (arm func() (arrived <-chan struct{}, release func())) {
	w.t.Helper()
	target, err := url.Parse(w.gh.URL())
	if err != nil {
		w.t.Fatal(err)
	}
	target.Path = ""
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) }}
	var mu sync.Mutex
	var hold chan struct{}
	var arrivedCh chan struct{}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		h, a := hold, arrivedCh
		hold, arrivedCh = nil, nil
		mu.Unlock()
		if h != nil {
			close(a)
			<-h
		}
		proxy.ServeHTTP(rw, r)
	}))
	w.t.Cleanup(srv.Close)
	w.env["GITHUB_API_URL"] = srv.URL + "/"
	return func() (<-chan struct{}, func()) {
		mu.Lock()
		defer mu.Unlock()
		hold, arrivedCh = make(chan struct{}), make(chan struct{})
		h := hold
		return arrivedCh, func() { close(h) }
	}
}

func TestWebhook_PushDuringARun_SyncedAfterIt(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	arm := w.gateGitHub()
	seed(w)
	if inv := w.invoke(`{"trigger":"schedule"}`, time.Minute); inv.err != nil {
		t.Fatalf("the daily run: %v", inv.err)
	}
	r := newReceiverRig(t)

	w.repo.Write("규정/첫째.md", "# 첫째\n")
	first := w.repo.Commit("first push")
	if a := r.deliver(delivery("push", "delivery-1", pushPayload("knue/policies", "refs/heads/main", first), testWebhookSecret)); a.resp.StatusCode != 202 {
		t.Fatalf("first push: %d", a.resp.StatusCode)
	}

	// Lambda starts the first event; its run waits on GitHub.
	arrived, release := arm()
	h := w.lambdaHandler(new(bytes.Buffer))
	done := make(chan invocation)
	go func() {
		ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-first"})
		res, err := h.Handle(ctx, json.RawMessage(r.lambda.invocations()[0].Payload))
		done <- invocation{sum: res.RunSummary, err: err}
	}()
	<-arrived

	// A second push while the run is going: answered at once, queued.
	w.repo.Write("규정/둘째.md", "# 둘째\n")
	second := w.repo.Commit("second push")
	a := r.deliver(delivery("push", "delivery-2", pushPayload("knue/policies", "refs/heads/main", second), testWebhookSecret))
	if a.resp.StatusCode != 202 {
		t.Fatalf("second push during the run: %d %q", a.resp.StatusCode, a.resp.Body)
	}
	queued := r.lambda.invocations()
	if len(queued) != 2 {
		t.Fatalf("%d invocations, want 2 (one per push)", len(queued))
	}
	release()
	if inv := <-done; inv.err != nil || inv.sum.Status != policy.RunSuccess {
		t.Fatalf("first run: %v %+v", inv.err, inv.sum)
	}

	// Lambda then runs the queued event: nothing of the second push is lost.
	w.now = w.now.Add(time.Minute)
	inv := w.handToSync(queued[1])
	if inv.err != nil {
		t.Fatalf("second run: %v", inv.err)
	}
	st := w.state()
	if st.lastCommit != second || st.lastRun.Delivery != "delivery-2" {
		t.Errorf("lastCommit %s (want %s), lastRun %+v", st.lastCommit, second, st.lastRun)
	}
	for _, name := range []string{"첫째", "둘째"} {
		if _, ok := st.policies[name]; !ok {
			t.Errorf("policy %s missing", name)
		}
	}
}

// A forced push (GitHub's push event says "forced": true) reaches the sync
// function as such, and its run, on Workers KV, waits out the consistency
// window before trusting what it reads: a run seconds before may have
// synced the head the push dropped, which no compare names
// (docs/design.md, "Stale reads"). A push that is not forced does not
// wait.
func TestWebhook_ForcedPush_HandedOnAsForced_RunWaitsOutTheWindow(t *testing.T) {
	t.Parallel()
	w := newCloudflareWorld(t)
	seed(w)
	if inv := w.invoke(`{"trigger":"schedule"}`, time.Minute); inv.err != nil {
		t.Fatalf("the daily run: %v", inv.err)
	}
	r := newReceiverRig(t)
	for i, forced := range []bool{false, true} {
		w.repo.Write("규정/제3편/연구윤리 규정.md", fmt.Sprintf("# 연구윤리 규정\n\n제%d판\n", i))
		after := w.repo.Commit("연구윤리 규정")
		var p map[string]any
		if err := json.Unmarshal([]byte(pushPayload("knue/policies", "refs/heads/main", after)), &p); err != nil {
			t.Fatal(err)
		}
		p["forced"] = forced
		body, _ := json.Marshal(p)
		if a := r.deliver(delivery("push", fmt.Sprintf("delivery-%d", i), string(body), testWebhookSecret)); a.resp.StatusCode != 202 {
			t.Fatalf("receiver answered %d %q", a.resp.StatusCode, a.resp.Body)
		}
		got := r.lambda.invocations()
		var ev lambda.WebhookEvent
		if err := json.Unmarshal(got[len(got)-1].Payload, &ev); err != nil || ev.Forced != forced {
			t.Fatalf("handed on %s (%v), want forced %v", got[len(got)-1].Payload, err, forced)
		}
		if wantBefore := map[bool]string{true: p["before"].(string)}[forced]; ev.Before != wantBefore {
			t.Errorf("handed on before %q, want %q: the branch's commit before a forced push tells GitHub's stale view from a later push", ev.Before, wantBefore)
		}
		inv := w.handToSync(got[len(got)-1])
		if inv.err != nil {
			t.Fatalf("sync: %v\n%s", inv.err, inv.logs)
		}
		// the message itself: "not waiting out …" or "no time to wait out …" is not the wait
		if waited := strings.Contains(inv.logs, `"msg":"waiting out the consistency window"`); waited != forced {
			t.Errorf("forced %v: the run waited out the window: %v\n%s", forced, waited, inv.logs)
		}
	}
}
