package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
)

// End-to-end runs of the whole program on a fake GitHub and a fake
// Cloudflare Workers KV namespace, for what only Cloudflare does: requests
// counted per endpoint, 429 storms, bulk answers with unsuccessful_keys,
// listings that fail, a token to keep secret, keys that need escaping.

// cfRun is what the fake saw during one run.
type cfRun struct {
	result
	seen map[cloudflaretest.Endpoint]int
}

// syncCounted runs sync like w.sync and returns the requests the fake
// received during the run, per endpoint.
func (w *world) syncCounted(wantCode int, args ...string) cfRun {
	w.t.Helper()
	w.cf.ResetCounts()
	r := w.sync(wantCode, args...)
	seen := map[cloudflaretest.Endpoint]int{}
	for _, e := range []cloudflaretest.Endpoint{cloudflaretest.List, cloudflaretest.Get, cloudflaretest.Metadata, cloudflaretest.Put, cloudflaretest.Delete, cloudflaretest.BulkPut, cloudflaretest.BulkDelete, cloudflaretest.BulkGet, cloudflaretest.Unknown} {
		if n := w.cf.Requests(e); n > 0 {
			seen[e] = n
		}
	}
	if _, reg := r.requests(w.t); reg != w.cf.TotalRequests() {
		w.t.Errorf("the summary counts %d cloudflare requests, the fake saw %d", reg, w.cf.TotalRequests())
	}
	return cfRun{result: r, seen: seen}
}

// isBulkWrite reports whether r is a bulk write or bulk delete.
func isBulkWrite(r *http.Request) bool {
	p := r.URL.Path
	return (r.Method == http.MethodPut && strings.HasSuffix(p, "/bulk")) ||
		(r.Method == http.MethodPost && strings.HasSuffix(p, "/bulk/delete")) ||
		(r.Method == http.MethodDelete && strings.HasSuffix(p, "/bulk"))
}

// bodyMentions reports whether r's body contains s, leaving the body for
// the proxy to send on.
func bodyMentions(r *http.Request, s string) bool {
	if r.Body == nil {
		return false
	}
	b, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(b))
	return err == nil && bytes.Contains(b, []byte(s))
}

func TestCloudflare_RequestsPerRun_OneListPerPrefixOneBulkWritePerBatch(t *testing.T) {
	t.Parallel()
	w := newCloudflareWorld(t)
	seed(w)
	first := w.syncCounted(0)
	// Reads: one bulk get of lastCommit, lastRun and the lease (none
	// there), one list page each of queue:, policy: and dead-letter:.
	// Writes, each one bulk write: the lease, the 3 queue entries
	// (announced first), the 3 policies, the run record (history +
	// lastRun), then lastCommit with the lease released.
	want := map[cloudflaretest.Endpoint]int{cloudflaretest.BulkGet: 1, cloudflaretest.List: 3, cloudflaretest.BulkPut: 5}
	if diff := cmp.Diff(want, first.seen); diff != "" {
		t.Errorf("first run: requests per endpoint (-want +got):\n%s", diff)
	}

	w.repo.Write("규정/제3편/신규규정.md", "# 신규 규정\n")
	w.repo.Write("규정/제1편/학칙.md", "# 한국교원대학교 학칙 (개정)\n")
	w.repo.Remove("규정/제1편/대학원 학칙.md")
	w.repo.Commit("add, modify, delete")
	incr := w.syncCounted(0)
	// The same bulk get; no listing at all (the first run's lastRun says
	// nothing waits for retry and no dead letter holds anything back): one
	// bulk get of the three policies the changeset touches;
	// writes: the lease, one bulk write of the 2 queue entries, one of the
	// 2 puts, one bulk delete of the deleted policy and its queue entry,
	// the run record, lastCommit with the lease's release.
	want = map[cloudflaretest.Endpoint]int{cloudflaretest.BulkGet: 2, cloudflaretest.BulkPut: 5, cloudflaretest.BulkDelete: 1}
	if diff := cmp.Diff(want, incr.seen); diff != "" {
		t.Errorf("incremental run: requests per endpoint (-want +got):\n%s", diff)
	}

	unchanged := w.syncCounted(0)
	// One bulk get of lastCommit, lastRun and the lease (was the last run
	// clean? is anything waiting for retry?), one bulk write of the run
	// record: no listing, no lease taken, no policy read.
	want = map[cloudflaretest.Endpoint]int{cloudflaretest.BulkGet: 1, cloudflaretest.BulkPut: 1}
	if diff := cmp.Diff(want, unchanged.seen); diff != "" {
		t.Errorf("unchanged run: requests per endpoint (-want +got):\n%s", diff)
	}
}

// stormHistory makes the same history in w: the seed, synced, then a commit
// that adds, edits, renames and deletes. It returns the last head.
func stormHistory(w *world) string {
	seed(w)
	w.sync(0)
	w.repo.Write("규정/제3편/신규규정.md", "# 신규 규정\n")
	w.repo.Write("규정/제1편/학칙.md", "# 한국교원대학교 학칙 (개정)\n")
	w.repo.Move("규정/제2편/연구소 설치(운영)․규정.md", "규정/제2편/연구소 규정.md")
	w.repo.Remove("규정/제1편/대학원 학칙.md")
	return w.repo.Commit("add, edit, rename, delete")
}

func TestCloudflare_429Storm_RetriedAfterRetryAfter_RunCompletes(t *testing.T) {
	t.Parallel()
	// The same history without the storm says what the run costs when
	// every request is answered the first time.
	calm := newCloudflareWorld(t)
	stormHistory(calm)
	_, calmRequests := calm.sync(0).requests(t)

	w := newCloudflareWorld(t)
	w.env["CONCURRENCY"] = "1" // the fake draws its faults in the order requests arrive
	head := stormHistory(w)
	w.sleeps = nil
	// Seeded: half of the requests meet a 429 with Retry-After: 1.
	w.cf.SetRates(cloudflaretest.Rates{RateLimit: 0.5})
	r := w.syncCounted(0)
	w.cf.SetRates(cloudflaretest.Rates{})

	s := w.state()
	if diff := cmp.Diff(headState(w, head), registryState(s)); diff != "" {
		t.Errorf("registry != head tree after the storm (-want +got):\n%s", diff)
	}
	if s.lastCommit != head || s.lastRun.Status != policy.RunSuccess {
		t.Errorf("lastCommit %s (want %s), lastRun %+v", s.lastCommit, head, s.lastRun)
	}
	_, stormRequests := r.requests(t)
	// Every 429 was followed by one wait and one more try, so the tries
	// beyond the calm run's are the waits.
	if len(w.sleeps) < 3 || stormRequests-calmRequests != len(w.sleeps) {
		t.Errorf("%d requests in the storm, %d without, %d waits: want one wait per 429 and a real storm", stormRequests, calmRequests, len(w.sleeps))
	}
	for _, d := range w.sleeps {
		// Retry-After plus at most a tenth of it as jitter.
		if d < time.Second || d > time.Second+time.Second/10 {
			t.Errorf("waited %v after a 429 with Retry-After: 1, want 1s to 1.1s (all waits %v)", d, w.sleeps)
			break
		}
	}
	if !strings.Contains(r.stderr, "retrying cloudflare request") {
		t.Errorf("the retries are not logged:\n%s", r.stderr)
	}
}

func TestCloudflare_429StormNeverEnds_FailsKeepsLastCommitDeletesNothing(t *testing.T) {
	t.Parallel()
	w := newCloudflareWorld(t)
	first := seed(w)
	w.sync(0)
	before := w.state()
	w.repo.Remove("규정/제1편")
	w.repo.Write("규정/제2편/연구소 설치(운영)․규정.md", "# 개정\n")
	head := w.repo.Commit("repeal part 1, amend part 2")
	// From the plan's first write on, Cloudflare answers nothing but 429.
	var once sync.Once
	w.watchCloudflare(func(r *http.Request) {
		if isBulkWrite(r) && bodyMentions(r, registry.PolicyPrefix) {
			once.Do(func() { w.cf.SetRates(cloudflaretest.Rates{RateLimit: 1}) })
		}
	})
	r := w.sync(exitFailed)
	w.cf.SetRates(cloudflaretest.Rates{})

	s := w.state()
	if diff := cmp.Diff(before.policies, s.policies); diff != "" {
		t.Errorf("policies changed in a storm (-before +after):\n%s", diff)
	}
	if s.lastCommit != first {
		t.Errorf("lastCommit moved to %s", s.lastCommit)
	}
	if !strings.Contains(r.stderr, "cloudflare api rate limit") {
		t.Errorf("the error does not say rate limit:\n%s", r.stderr)
	}
	// Cloudflare refused the run record too: lastRun is still the first
	// run's, and the log says so.
	if s.lastRun.CommitSHA != first || !strings.Contains(r.stderr, "run not recorded") {
		t.Errorf("lastRun = %+v; stderr:\n%s", s.lastRun, r.stderr)
	}

	// The storm over, the next run does the work.
	w.sync(0)
	s = w.state()
	if diff := cmp.Diff(headState(w, head), registryState(s)); diff != "" {
		t.Errorf("registry != head tree after the storm (-want +got):\n%s", diff)
	}
	if s.lastCommit != head {
		t.Errorf("lastCommit %s, want %s", s.lastCommit, head)
	}
}

func TestCloudflare_RunRecordRefused_Exit1LastCommitKept(t *testing.T) {
	t.Parallel()
	w := newCloudflareWorld(t)
	first := seed(w)
	w.sync(0)
	w.repo.Write("규정/제3편/신규규정.md", "# 신규 규정\n")
	head := w.repo.Commit("add")
	// Every change lands, but Cloudflare reports lastRun unsuccessful: the
	// run is not recorded, so lastCommit must stay and the run must fail.
	w.cf.FailKeys(registry.LastRunKey)
	r := w.run("sync")
	w.cf.FailKeys()
	if r.code != exitFailed {
		t.Errorf("exit %d, want %d (failed); summary: %v", r.code, exitFailed, r.summaryLine(t)["status"])
	}
	s := w.state()
	if s.lastCommit != first {
		t.Errorf("lastCommit moved to %s past a run that was not recorded", s.lastCommit)
	}
	if !strings.Contains(r.stderr, "run not recorded") {
		t.Errorf("stderr does not say the run was not recorded:\n%s", r.stderr)
	}
	w.sync(0)
	if s := w.state(); s.lastCommit != head || s.lastRun.Status != policy.RunSuccess {
		t.Errorf("next run: lastCommit %s (want %s), lastRun %+v", s.lastCommit, head, s.lastRun)
	}
}

func TestCloudflare_PartialBulkFailures_QueuedForRetryThenLand(t *testing.T) {
	t.Parallel()
	w := newCloudflareWorld(t)
	seed(w)
	w.sync(0)
	before := w.state()
	w.repo.Write("규정/제1편/학칙.md", "# 한국교원대학교 학칙 (개정)\n")
	w.repo.Write("규정/제3편/신규규정.md", "# 신규 규정\n")
	w.repo.Write("규정/제2편/연구소 설치(운영)․규정.md", "# 연구소 규정 (개정)\n")
	w.repo.Remove("규정/제1편/대학원 학칙.md")
	head := w.repo.Commit("edit, add, edit, delete")
	failing := []string{"학칙", "신규규정", "대학원 학칙"}
	var keys []string
	for _, n := range failing {
		keys = append(keys, registry.PolicyKey(n))
	}
	w.cf.FailKeys(keys...) // the bulk answers list them in unsuccessful_keys
	r := w.sync(exitPartial)
	w.cf.FailKeys()

	s := w.state()
	if !strings.Contains(r.stderr, "unsuccessful") {
		t.Errorf("the failure is not explained:\n%s", r.stderr)
	}
	if diff := cmp.Diff(before.policies["학칙"], s.policies["학칙"]); diff != "" {
		t.Errorf("학칙 changed although its write failed (-before +after):\n%s", diff)
	}
	if _, ok := s.policies["신규규정"]; ok {
		t.Error("신규규정 is in the registry although its write failed")
	}
	if _, ok := s.policies["대학원 학칙"]; !ok {
		t.Error("대학원 학칙 is gone although its delete failed")
	}
	if got := s.policies["연구소 설치(운영)․규정"]; got.Title != "연구소 규정 (개정)" {
		t.Errorf("the write that succeeded did not land: %+v", got)
	}
	wantOps := map[string]string{"학칙": policy.OpUpdate, "신규규정": policy.OpAdd, "대학원 학칙": "delete"}
	for _, n := range failing {
		q, ok := s.queue[n]
		if !ok || q.RetryCount != 1 || q.ErrorMessage == nil || !strings.Contains(*q.ErrorMessage, "unsuccessful") || q.Operation != wantOps[n] {
			t.Errorf("queue:%s = %+v (present %v), want a %s with retryCount 1 and the error", n, q, ok, wantOps[n])
		}
	}
	if q := s.queue["연구소 설치(운영)․규정"]; q.ErrorMessage != nil || q.RetryCount != 0 || q.Operation != policy.OpUpdate {
		t.Errorf("queue of the landed update = %+v, want a clean update", q)
	}
	if s.lastCommit != head || s.lastRun.Status != policy.RunPartial || s.lastRun.ErrorCount != 3 {
		t.Errorf("lastCommit %s (want %s), lastRun %+v: want partial with 3 failures", s.lastCommit, head, s.lastRun)
	}
	var failed []string
	for _, f := range s.lastRun.Failures {
		failed = append(failed, f.PolicyName)
	}
	slices.Sort(failed)
	if diff := cmp.Diff([]string{"대학원 학칙", "신규규정", "학칙"}, failed); diff != "" {
		t.Errorf("lastRun failures (-want +got):\n%s", diff)
	}

	// Faults cleared, the next run retries them although no commit came.
	w.sync(0)
	s = w.state()
	if diff := cmp.Diff(headState(w, head), registryState(s)); diff != "" {
		t.Errorf("registry != head tree after the retry (-want +got):\n%s", diff)
	}
	for _, n := range []string{"학칙", "신규규정"} {
		if q := s.queue[n]; q.ErrorMessage != nil || q.RetryCount != 0 || q.SHA != s.policies[n].SHA || q.Operation != wantOps[n] {
			t.Errorf("queue:%s = %+v after the retry, want a clean %s of %s", n, q, wantOps[n], s.policies[n].SHA)
		}
	}
	if q, ok := s.queue["대학원 학칙"]; ok {
		t.Errorf("queue of the deleted policy is still there: %+v", q)
	}
	if s.lastRun.Status != policy.RunSuccess || s.lastCommit != head {
		t.Errorf("lastRun %+v, lastCommit %s", s.lastRun, s.lastCommit)
	}
}

func TestCloudflare_ListingServerError_FailsDeletesNothing(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{registry.QueuePrefix, registry.PolicyPrefix, registry.DeadLetterPrefix} {
		t.Run(strings.TrimSuffix(prefix, ":"), func(t *testing.T) {
			w := newCloudflareWorld(t)
			first := seed(w)
			w.sync(0)
			before := w.state()
			w.repo.Remove("규정/제1편")
			w.repo.Commit("repeal part 1")
			// After a clean run an incremental run lists nothing: lastRun
			// names what waits for retry and what dead letters hold back,
			// and the run reads the policies it touches by name. After a
			// lastRun written by an older syncjob it lists all three.
			forgetPending(t, w)
			// The listing of prefix answers 502 to its first try and every
			// retry (and only it: other requests may run beside it).
			w.cf.FailListing(prefix, slices.Repeat([]cloudflaretest.Fault{cloudflaretest.ServerError(http.StatusBadGateway)}, cloudflare.DefaultMaxRetries+1)...)
			r := w.sync(exitFailed)
			s := w.state()
			for _, k := range before.keys {
				if !slices.Contains(s.keys, k) {
					t.Errorf("%s was deleted by a run whose listing failed", k)
				}
			}
			if diff := cmp.Diff(before.policies, s.policies); diff != "" {
				t.Errorf("policies changed (-before +after):\n%s", diff)
			}
			if s.lastCommit != first {
				t.Errorf("lastCommit moved to %s", s.lastCommit)
			}
			if s.lastRun.Status != policy.RunFailed || !strings.Contains(s.lastRun.Error, "502") || !strings.Contains(s.lastRun.Error, prefix) {
				t.Errorf("lastRun = %+v, want failed naming the listing of %s and the 502", s.lastRun, prefix)
			}
			if !strings.Contains(r.stderr, "502") {
				t.Errorf("stderr does not say what failed:\n%s", r.stderr)
			}
		})
	}
}

func TestCloudflare_TokenNeverPrinted(t *testing.T) {
	t.Parallel()
	echo := cloudflaretest.Fault{Status: http.StatusBadRequest, Code: cloudflaretest.CodeBadRequest, Message: "request refused for token " + cfToken}
	for _, tc := range []struct {
		name  string
		token string // CLOUDFLARE_API_TOKEN; the fake expects cfToken
		// arm injects the fault before each of the two runs
		arm           func(w *world)
		code, dryCode int
	}{
		{"success", cfToken, nil, exitOK, exitOK},
		{"rate limit storm", cfToken, func(w *world) { w.cf.SetRates(cloudflaretest.Rates{RateLimit: 1}) }, exitFailed, exitFailed},
		{"server errors", cfToken, func(w *world) { w.cf.SetRates(cloudflaretest.Rates{ServerError: 1}) }, exitFailed, exitFailed},
		{"unsuccessful keys", cfToken, func(w *world) { w.cf.FailKeys(registry.PolicyKey("학칙")) }, exitPartial, exitOK},
		{"answer echoes the token", cfToken, func(w *world) { w.cf.FailNext(echo) }, exitFailed, exitFailed},
		{"token refused", "cfut_WRONGWRONGWRONG0123456789abcdefXYZ", nil, exitUsage, exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newCloudflareWorld(t)
			seed(w)
			w.env["LOG_LEVEL"] = "debug"
			w.env["CLOUDFLARE_API_TOKEN"] = tc.token
			arm := func() {
				if tc.arm != nil {
					tc.arm(w)
				}
			}
			arm()
			r := w.sync(tc.code)
			arm()
			j := w.sync(tc.dryCode, "--json", "--dry-run")
			w.cf.SetRates(cloudflaretest.Rates{})
			w.cf.FailKeys()
			stored := ""
			for _, k := range w.cf.Keys() {
				v, m, _ := w.cf.Value(k)
				stored += k + " " + string(v) + " " + string(m) + "\n"
			}
			lastRun := ""
			if st := w.state(); st.lastRun != nil {
				b, err := json.Marshal(st.lastRun)
				if err != nil {
					t.Fatal(err)
				}
				lastRun = string(b)
			}
			for where, text := range map[string]string{"stdout": r.stdout + j.stdout, "stderr": r.stderr + j.stderr, "lastRun": lastRun, "the registry": stored} {
				if strings.Contains(text, tc.token) || strings.Contains(text, tc.token[5:25]) {
					t.Errorf("the token appears in %s:\n%s", where, text)
				}
			}
		})
	}
}

func TestCloudflare_OddKeys_RoundTripExactly(t *testing.T) {
	t.Parallel()
	w := newCloudflareWorld(t)
	names := []string{
		"학칙: 총칙 (2026)",
		"연구소 설치(운영)․규정",
		"a b:c(d)․e",
		"100% 확인?",
		"a+b & c#1",
	}
	files := map[string]string{}
	for _, n := range names {
		files[n] = "규정/제 1 편: (총칙)/" + n + ".md"
		w.repo.Write(files[n], "# 제목 "+n+"\n")
	}
	w.repo.Commit("odd names")
	w.sync(0)

	listed := func() map[string]policy.Entry {
		t.Helper()
		r := w.run("list", "--json")
		if r.code != 0 {
			t.Fatalf("list: exit %d\n%s", r.code, r.stderr)
		}
		var list []policy.Entry
		if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
			t.Fatalf("list --json: %v\n%s", err, r.stdout)
		}
		out := map[string]policy.Entry{}
		for _, e := range list {
			out[e.PolicyName] = e
		}
		return out
	}
	got := listed()
	want := map[string]string{}
	for _, n := range names {
		want[n] = files[n] + " # 제목 " + n
	}
	paths := func(m map[string]policy.Entry) map[string]string {
		out := map[string]string{}
		for n, e := range m {
			out[n] = e.Path + " # " + e.Title
		}
		return out
	}
	if diff := cmp.Diff(want, paths(got)); diff != "" {
		t.Errorf("list --json (-want +got):\n%s", diff)
	}
	var wantKeys []string
	for _, n := range names {
		wantKeys = append(wantKeys, registry.PolicyKey(n), registry.QueueKey(n))
	}
	var gotKeys []string
	for _, k := range w.cf.Keys() {
		if !strings.HasPrefix(k, "metadata:sync:") {
			gotKeys = append(gotKeys, k)
		}
	}
	slices.Sort(wantKeys)
	if diff := cmp.Diff(wantKeys, gotKeys); diff != "" {
		t.Errorf("keys in Cloudflare (-want +got):\n%s", diff)
	}

	// An edit whose write fails is read back by key (GET values/{key}) on
	// the retry; a delete goes by key through the bulk delete.
	w.repo.Write(files["100% 확인?"], "# 확인 개정\n")
	w.repo.Remove(files["a+b & c#1"])
	head := w.repo.Commit("edit and delete odd names")
	w.cf.FailKeys(registry.PolicyKey("100% 확인?"))
	w.sync(exitPartial)
	w.cf.FailKeys()
	w.sync(0)
	got = listed()
	want["100% 확인?"] = files["100% 확인?"] + " # 확인 개정"
	delete(want, "a+b & c#1")
	if diff := cmp.Diff(want, paths(got)); diff != "" {
		t.Errorf("list --json after edit and delete (-want +got):\n%s", diff)
	}
	s := w.state()
	if diff := cmp.Diff(headState(w, head), registryState(s)); diff != "" {
		t.Errorf("registry != head tree (-want +got):\n%s", diff)
	}
	if q := s.queue["100% 확인?"]; q.ErrorMessage != nil || q.RetryCount != 0 {
		t.Errorf("queue of the retried odd key = %+v, want clean", q)
	}
}

// forgetPending rewrites lastRun without its "pending" list, as a syncjob
// that did not record one left it.
func forgetPending(t *testing.T, w *world) {
	t.Helper()
	raw, meta, ok := w.cf.Value(registry.LastRunKey)
	if !ok {
		t.Fatal("no lastRun")
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "pending")
	b, _ := json.Marshal(m)
	w.cf.Set(registry.LastRunKey, b, meta, 0)
}
