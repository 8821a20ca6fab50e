package cloudflare_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	cf "github.com/cloudflare/cloudflare-go"
	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
	"github.com/knue/syncjob/internal/registry/registrytest"
)

// mustClient returns a fake and a real cloudflare-go client for it, with the
// client's own retries off so each fault is seen as the server sent it.
func mustClient(t *testing.T, token string) (*cloudflaretest.Fake, *cf.API, *registrytest.Clock) {
	t.Helper()
	clock := registrytest.NewClock(registrytest.Epoch)
	f := cloudflaretest.New(cloudflaretest.Config{AccountID: "acc", NamespaceID: "ns", Token: "tok", Now: clock.Now, Seed: 3})
	t.Cleanup(f.Close)
	api, err := cf.NewWithAPIToken(token, cf.BaseURL(f.BaseURL()), cf.HTTPClient(f.Client()), cf.UsingRetryPolicy(0, 0, 0), cf.UsingRateLimit(1e9))
	if err != nil {
		t.Fatal(err)
	}
	return f, api, clock
}

var rc = cf.AccountIdentifier("acc")

func TestFake_CloudflareGo_WriteGetListDelete(t *testing.T) {
	t.Parallel()
	f, api, _ := mustClient(t, "tok")
	ctx := t.Context()
	if _, err := api.WriteWorkersKVEntry(ctx, rc, cf.WriteWorkersKVEntryParams{NamespaceID: "ns", Key: "policy:학칙 a/b?#%+", Value: []byte("one")}); err != nil {
		t.Fatalf("WriteWorkersKVEntry: %v", err)
	}
	_, err := api.WriteWorkersKVEntries(ctx, rc, cf.WriteWorkersKVEntriesParams{NamespaceID: "ns", KVs: []*cf.WorkersKVPair{
		{Key: "policy:제1\u20242조", Value: "two", Metadata: map[string]any{"sha": "s2"}},
		{Key: "queue:x", Value: "dGhyZWU=", Base64: true, ExpirationTTL: 60},
	}})
	if err != nil {
		t.Fatalf("WriteWorkersKVEntries: %v", err)
	}
	for k, want := range map[string]string{"policy:학칙 a/b?#%+": "one", "policy:제1\u20242조": "two", "queue:x": "three"} {
		got, err := api.GetWorkersKV(ctx, rc, cf.GetWorkersKVParams{NamespaceID: "ns", Key: k})
		if err != nil || string(got) != want {
			t.Errorf("GetWorkersKV(%q) = %q, %v; want %q", k, got, err, want)
		}
	}
	res, err := api.ListWorkersKVKeys(ctx, rc, cf.ListWorkersKVsParams{NamespaceID: "ns", Prefix: "policy:", Limit: 10})
	if err != nil {
		t.Fatalf("ListWorkersKVKeys: %v", err)
	}
	want := []cf.StorageKey{
		{Name: "policy:제1\u20242조", Metadata: map[string]any{"sha": "s2"}},
		{Name: "policy:학칙 a/b?#%+"},
	}
	if diff := cmp.Diff(want, res.Result); diff != "" {
		t.Errorf("listed (-want +got):\n%s", diff)
	}
	res, _ = api.ListWorkersKVKeys(ctx, rc, cf.ListWorkersKVsParams{NamespaceID: "ns", Prefix: "queue:"})
	if len(res.Result) != 1 || res.Result[0].Expiration != int(registrytest.Epoch.Unix()+60) {
		t.Errorf("queue listing = %+v, want expiration at Epoch+60s", res.Result)
	}
	if _, err := api.DeleteWorkersKVEntries(ctx, rc, cf.DeleteWorkersKVEntriesParams{NamespaceID: "ns", Keys: []string{"policy:제1\u20242조"}}); err != nil {
		t.Fatalf("DeleteWorkersKVEntries (DELETE .../bulk): %v", err)
	}
	if _, err := api.DeleteWorkersKVEntry(ctx, rc, cf.DeleteWorkersKVEntryParams{NamespaceID: "ns", Key: "queue:x"}); err != nil {
		t.Fatalf("DeleteWorkersKVEntry: %v", err)
	}
	if diff := cmp.Diff([]string{"policy:학칙 a/b?#%+"}, f.Keys()); diff != "" {
		t.Errorf("keys left (-want +got):\n%s", diff)
	}
	for e, n := range map[cloudflaretest.Endpoint]int{cloudflaretest.Put: 1, cloudflaretest.BulkPut: 1, cloudflaretest.Get: 3, cloudflaretest.List: 2, cloudflaretest.BulkDelete: 1, cloudflaretest.Delete: 1} {
		if got := f.Requests(e); got != n {
			t.Errorf("requests to %s = %d, want %d", e, got, n)
		}
	}
}

func TestFake_Get_Missing_404Code10009(t *testing.T) {
	t.Parallel()
	_, api, _ := mustClient(t, "tok")
	_, err := api.GetWorkersKV(t.Context(), rc, cf.GetWorkersKVParams{NamespaceID: "ns", Key: "absent"})
	var nf *cf.NotFoundError
	if !errors.As(err, &nf) || !nf.InternalErrorCodeIs(cloudflaretest.CodeKeyNotFound) {
		t.Fatalf("err = %v, want *cloudflare.NotFoundError with code 10009", err)
	}
}

func TestFake_WrongToken_401Code10000(t *testing.T) {
	t.Parallel()
	f, api, _ := mustClient(t, "not-the-token")
	_, err := api.GetWorkersKV(t.Context(), rc, cf.GetWorkersKVParams{NamespaceID: "ns", Key: "k"})
	var auth *cf.AuthorizationError
	if !errors.As(err, &auth) || !auth.InternalErrorCodeIs(cloudflaretest.CodeAuth) {
		t.Fatalf("err = %v, want *cloudflare.AuthorizationError with code 10000", err)
	}
	if got := f.Requests(cloudflaretest.Get); got != 1 {
		t.Errorf("requests = %d, want 1", got)
	}
}

func TestFake_UnknownNamespace_404(t *testing.T) {
	t.Parallel()
	_, api, _ := mustClient(t, "tok")
	_, err := api.ListWorkersKVKeys(t.Context(), rc, cf.ListWorkersKVsParams{NamespaceID: "other"})
	var nf *cf.NotFoundError
	if !errors.As(err, &nf) || !nf.InternalErrorCodeIs(cloudflaretest.CodeNamespaceMissing) {
		t.Fatalf("err = %v, want *cloudflare.NotFoundError with code %d", err, cloudflaretest.CodeNamespaceMissing)
	}
}

func TestFake_List_CursorPagesAndLimitBounds(t *testing.T) {
	t.Parallel()
	f, api, _ := mustClient(t, "tok")
	for i := range 25 {
		f.Set("policy:"+string(rune('a'+i)), []byte("v"), nil, 0)
	}
	var got []string
	cursor := ""
	pages := 0
	for {
		res, err := api.ListWorkersKVKeys(t.Context(), rc, cf.ListWorkersKVsParams{NamespaceID: "ns", Limit: 10, Cursor: cursor})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		pages++
		for _, k := range res.Result {
			got = append(got, k.Name)
		}
		if res.Count != len(res.Result) {
			t.Errorf("result_info.count = %d, want %d", res.Count, len(res.Result))
		}
		if cursor = res.Cursor; cursor == "" {
			break
		}
	}
	if pages != 3 || len(got) != 25 || got[0] != "policy:a" || got[24] != "policy:y" {
		t.Errorf("pages = %d, keys = %v; want 3 pages of a..y", pages, got)
	}
	for _, limit := range []int{9, 1001} {
		_, err := api.ListWorkersKVKeys(t.Context(), rc, cf.ListWorkersKVsParams{NamespaceID: "ns", Limit: limit})
		var re *cf.RequestError
		if !errors.As(err, &re) || !re.InternalErrorCodeIs(cloudflaretest.CodeBadLimit) {
			t.Errorf("limit %d: err = %v, want a 400 with code %d", limit, err, cloudflaretest.CodeBadLimit)
		}
	}
}

func TestFake_Limits_Refused(t *testing.T) {
	t.Parallel()
	_, api, _ := mustClient(t, "tok")
	ctx := t.Context()
	tooMany := make([]*cf.WorkersKVPair, cloudflaretest.MaxBulkPairs+1)
	for i := range tooMany {
		tooMany[i] = &cf.WorkersKVPair{Key: "k" + string(rune('a'+i%26)) + strings.Repeat("x", i%7), Value: "v"}
	}
	for name, kvs := range map[string][]*cf.WorkersKVPair{
		"key 513 bytes":  {{Key: strings.Repeat("k", 513), Value: "v"}},
		"metadata 1025":  {{Key: "k", Value: "v", Metadata: strings.Repeat("m", 1023)}},
		"ttl 59":         {{Key: "k", Value: "v", ExpirationTTL: 59}},
		"10,001 pairs":   tooMany,
		"bad base64":     {{Key: "k", Value: "!!", Base64: true}},
		"empty key":      {{Key: "", Value: "v"}},
		"dot-dot key":    {{Key: "..", Value: "v"}},
		"expiration now": {{Key: "k", Value: "v", Expiration: int(registrytest.Epoch.Unix())}},
	} {
		if _, err := api.WriteWorkersKVEntries(ctx, rc, cf.WriteWorkersKVEntriesParams{NamespaceID: "ns", KVs: kvs}); err == nil {
			t.Errorf("%s: bulk write accepted, want refused", name)
		}
	}
	ok := []*cf.WorkersKVPair{{Key: strings.Repeat("k", 512), Value: "v", Metadata: strings.Repeat("m", 1022), ExpirationTTL: 60}}
	if _, err := api.WriteWorkersKVEntries(ctx, rc, cf.WriteWorkersKVEntriesParams{NamespaceID: "ns", KVs: ok}); err != nil {
		t.Errorf("bulk write at every limit: %v", err)
	}
}

func TestFake_Bulk_OverTheByteLimit_413(t *testing.T) {
	t.Parallel()
	if cloudflaretest.MaxBulkBytes != 100_000_000 {
		t.Fatalf("MaxBulkBytes = %d, Cloudflare's limit is 100,000,000", cloudflaretest.MaxBulkBytes)
	}
	// A fake of 1 MB answers as one of 100 MB (the default) does past it;
	// sending 100 MB under -race takes seconds.
	const limit = 1_000_000
	f := cloudflaretest.New(cloudflaretest.Config{AccountID: "acc", NamespaceID: "ns", Token: "tok", MaxBulkBytes: limit})
	t.Cleanup(f.Close)
	put := func(valueBytes int) int {
		body := append([]byte(`[{"key":"k","value":"`), bytes.Repeat([]byte("x"), valueBytes)...)
		body = append(body, `"}]`...)
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, f.BaseURL()+"/accounts/acc/storage/kv/namespaces/ns/bulk", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := f.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := put(limit); got != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over the limit: status = %d, want 413", got)
	}
	if got := put(limit - len(`[{"key":"k","value":""}]`)); got != http.StatusOK {
		t.Errorf("a body of exactly the limit: status = %d, want 200", got)
	}
}

func TestFake_Faults_RateLimitServerErrorHang(t *testing.T) {
	t.Parallel()
	f, api, _ := mustClient(t, "tok")
	f.FailNext(cloudflaretest.RateLimit(3*time.Second), cloudflaretest.ServerError(502), cloudflaretest.Hang())
	params := cf.GetWorkersKVParams{NamespaceID: "ns", Key: "k"}
	_, err := api.GetWorkersKV(t.Context(), rc, params)
	if err == nil || !strings.Contains(err.Error(), "rate limit") {
		t.Errorf("first: err = %v, want cloudflare-go's rate limit error", err)
	}
	_, err = api.GetWorkersKV(t.Context(), rc, params)
	if err == nil || !strings.Contains(err.Error(), "502") {
		t.Errorf("second: err = %v, want a 502", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := api.GetWorkersKV(ctx, rc, params); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("third: err = %v, want the client's deadline (the request hangs)", err)
	}
	_, err = api.GetWorkersKV(t.Context(), rc, params)
	var nf *cf.NotFoundError
	if !errors.As(err, &nf) {
		t.Errorf("fourth: err = %v, want the real answer (404)", err)
	}

	// The 429 carries Retry-After and code 971.
	f.FailNext(cloudflaretest.RateLimit(3 * time.Second))
	if _, err := api.Raw(t.Context(), http.MethodGet, "/accounts/acc/storage/kv/namespaces/ns/keys", nil, nil); err == nil {
		t.Fatal("Raw after a 429: no error")
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, f.BaseURL()+"/accounts/acc/storage/kv/namespaces/ns/keys", nil)
	f.FailNext(cloudflaretest.RateLimit(3 * time.Second))
	r, err := f.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var env struct {
		Success bool
		Errors  []struct{ Code int }
	}
	_ = json.NewDecoder(r.Body).Decode(&env)
	if r.StatusCode != 429 || r.Header.Get("Retry-After") != "3" || env.Success || len(env.Errors) != 1 || env.Errors[0].Code != 971 {
		t.Errorf("429 answer: status %d, Retry-After %q, envelope %+v", r.StatusCode, r.Header.Get("Retry-After"), env)
	}
}

func TestFake_Rates_SeededDeterministic(t *testing.T) {
	t.Parallel()
	run := func() []int {
		f, api, _ := mustClient(t, "tok")
		f.SetRates(cloudflaretest.Rates{RateLimit: 0.3, ServerError: 0.2})
		var failed []int
		for i := range 40 {
			if _, err := api.ListWorkersKVKeys(t.Context(), rc, cf.ListWorkersKVsParams{NamespaceID: "ns"}); err != nil {
				failed = append(failed, i)
			}
		}
		return failed
	}
	a, b := run(), run()
	if len(a) == 0 || len(a) == 40 {
		t.Fatalf("failed requests = %v, want some but not all", a)
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("two runs with one seed differ (-first +second):\n%s", diff)
	}
}

func TestFake_PartialBulk_UnsuccessfulKeysNotWritten(t *testing.T) {
	t.Parallel()
	f, api, _ := mustClient(t, "tok")
	f.FailKeys("b")
	resp, err := api.Raw(t.Context(), http.MethodPut, "/accounts/acc/storage/kv/namespaces/ns/bulk",
		[]byte(`[{"key":"a","value":"1"},{"key":"b","value":"2"},{"key":"c","value":"3","metadata":{"sha":"x"}}]`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		SuccessfulKeyCount int      `json:"successful_key_count"`
		UnsuccessfulKeys   []string `json:"unsuccessful_keys"`
	}
	if err := json.Unmarshal(resp.Result, &res); err != nil {
		t.Fatal(err)
	}
	if res.SuccessfulKeyCount != 2 || !cmp.Equal(res.UnsuccessfulKeys, []string{"b"}) {
		t.Errorf("result = %+v, want 2 successful and b unsuccessful", res)
	}
	if diff := cmp.Diff([]string{"a", "c"}, f.Keys()); diff != "" {
		t.Errorf("stored (-want +got):\n%s", diff)
	}
	f.FailKeys()
	f.FailKeyFraction(0.5)
	resp, err = api.Raw(t.Context(), http.MethodPost, "/accounts/acc/storage/kv/namespaces/ns/bulk/delete", []byte(`["a","c"]`), nil)
	if err != nil {
		t.Fatalf("POST .../bulk/delete: %v", err)
	}
	_ = json.Unmarshal(resp.Result, &res)
	if res.SuccessfulKeyCount+len(res.UnsuccessfulKeys) != 2 || len(f.Keys()) != len(res.UnsuccessfulKeys) {
		t.Errorf("result = %+v with %v left, want the unsuccessful keys kept", res, f.Keys())
	}
}

func TestFake_Metadata_AndMultipartPut(t *testing.T) {
	t.Parallel()
	f, api, _ := mustClient(t, "tok")
	var body bytes.Buffer
	body.WriteString("--X\r\nContent-Disposition: form-data; name=\"value\"\r\n\r\n본문\r\n--X\r\nContent-Disposition: form-data; name=\"metadata\"\r\n\r\n{\"sha\": \"m\"}\r\n--X--\r\n")
	_, err := api.Raw(t.Context(), http.MethodPut, "/accounts/acc/storage/kv/namespaces/ns/values/policy:%ED%95%99%EC%B9%99?expiration_ttl=120", body.Bytes(),
		http.Header{"Content-Type": {"multipart/form-data; boundary=X"}})
	if err != nil {
		t.Fatalf("multipart put: %v", err)
	}
	v, meta, ok := f.Value("policy:학칙")
	if !ok || string(v) != "본문" || string(meta) != `{"sha":"m"}` {
		t.Errorf("stored %q %s %v", v, meta, ok)
	}
	resp, err := api.Raw(t.Context(), http.MethodGet, "/accounts/acc/storage/kv/namespaces/ns/metadata/policy:%ED%95%99%EC%B9%99", nil, nil)
	if err != nil || string(resp.Result) != `{"sha":"m"}` {
		t.Errorf("metadata = %s, %v", resp.Result, err)
	}
}

func TestFake_Expiry_FollowsClock(t *testing.T) {
	t.Parallel()
	f, api, clock := mustClient(t, "tok")
	_, err := api.WriteWorkersKVEntries(t.Context(), rc, cf.WriteWorkersKVEntriesParams{NamespaceID: "ns", KVs: []*cf.WorkersKVPair{{Key: "lease", Value: "x", ExpirationTTL: 60}}})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(59 * time.Second)
	if len(f.Keys()) != 1 {
		t.Fatalf("keys at 59s = %v, want the lease", f.Keys())
	}
	clock.Advance(time.Second)
	if _, err := api.GetWorkersKV(t.Context(), rc, cf.GetWorkersKVParams{NamespaceID: "ns", Key: "lease"}); err == nil {
		t.Errorf("Get at 60s: found, want expired")
	}
}

// postJSON sends body to a namespace path of the fake and decodes the
// envelope's result into result.
func postJSON(t *testing.T, f *cloudflaretest.Fake, path, body string, result any) (status int) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, f.BaseURL()+"/accounts/acc/storage/kv/namespaces/ns/"+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	env := struct {
		Success bool            `json:"success"`
		Result  json.RawMessage `json:"result"`
	}{}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatal(err)
	}
	if result != nil && env.Success {
		if err := json.Unmarshal(env.Result, result); err != nil {
			t.Fatalf("result %s: %v", env.Result, err)
		}
	}
	return resp.StatusCode
}

func TestFake_BulkGet_ValuesByKeyNullWhenAbsent(t *testing.T) {
	t.Parallel()
	f, _, _ := mustClient(t, "tok")
	f.Set("metadata:sync:lastCommit", []byte("0123abcd"), nil, 0)
	f.Set("metadata:sync:lastRun", []byte(`{"status":"success","note":"학칙"}`), json.RawMessage(`{"v":1}`), time.Hour)

	var text struct{ Values map[string]*string }
	body := `{"keys":["metadata:sync:lastCommit","metadata:sync:lastRun","metadata:sync:lease"],"type":"text"}`
	if st := postJSON(t, f, "bulk/get", body, &text); st != http.StatusOK {
		t.Fatalf("status %d", st)
	}
	lastRun := `{"status":"success","note":"학칙"}`
	want := map[string]*string{"metadata:sync:lastCommit": ptr("0123abcd"), "metadata:sync:lastRun": &lastRun, "metadata:sync:lease": nil}
	if diff := cmp.Diff(want, text.Values); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	if got := f.Requests(cloudflaretest.BulkGet); got != 1 {
		t.Errorf("bulk get requests = %d, want 1", got)
	}

	var parsed struct {
		Values map[string]struct {
			Value      map[string]string
			Metadata   map[string]int
			Expiration int64
		}
	}
	body = `{"keys":["metadata:sync:lastRun"],"type":"json","withMetadata":true}`
	if st := postJSON(t, f, "bulk/get", body, &parsed); st != http.StatusOK {
		t.Fatalf("status %d", st)
	}
	got := parsed.Values["metadata:sync:lastRun"]
	if got.Value["note"] != "학칙" || got.Metadata["v"] != 1 || got.Expiration == 0 {
		t.Errorf("with metadata = %+v", got)
	}

	keys := make([]string, cloudflaretest.MaxBulkGetKeys+1)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	b, _ := json.Marshal(map[string]any{"keys": keys})
	if st := postJSON(t, f, "bulk/get", string(b), nil); st != http.StatusBadRequest {
		t.Errorf("101 keys: status %d, want 400", st)
	}
}

func ptr(s string) *string { return &s }

func TestFake_KeyWrites_CountsLandedWritesPerKey(t *testing.T) {
	t.Parallel()
	f, api, _ := mustClient(t, "tok")
	f.FailKeys("p:b")
	for range 2 {
		if _, err := api.Raw(t.Context(), http.MethodPut, "/accounts/acc/storage/kv/namespaces/ns/bulk",
			[]byte(`[{"key":"p:a","value":"1"},{"key":"p:b","value":"2"},{"key":"q:a","value":"3"}]`), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := api.WriteWorkersKVEntry(t.Context(), rc, cf.WriteWorkersKVEntryParams{NamespaceID: "ns", Key: "p:c", Value: []byte("4")}); err != nil {
		t.Fatal(err)
	}
	f.ResetCounts() // request counts only
	if diff := cmp.Diff(map[string]int{"p:a": 2, "p:c": 1}, f.KeyWrites("p:")); diff != "" {
		t.Errorf("KeyWrites(p:) (-want +got):\n%s", diff)
	}
}

func TestFake_FailListing_OnlyThatPrefixsListingsMeetTheFaults(t *testing.T) {
	t.Parallel()
	f, api, _ := mustClient(t, "tok")
	f.FailListing("a:", cloudflaretest.ServerError(http.StatusBadGateway), cloudflaretest.ServerError(http.StatusBadGateway))
	list := func(prefix string) error {
		_, err := api.ListWorkersKVKeys(t.Context(), rc, cf.ListWorkersKVsParams{NamespaceID: "ns", Prefix: prefix})
		return err
	}
	if err := list("b:"); err != nil {
		t.Errorf("listing b: %v, want no fault (they are a:'s)", err)
	}
	if _, err := api.WriteWorkersKVEntry(t.Context(), rc, cf.WriteWorkersKVEntryParams{NamespaceID: "ns", Key: "a:1", Value: []byte("1")}); err != nil {
		t.Errorf("write: %v, want no fault", err)
	}
	for i := range 2 {
		if err := list("a:"); err == nil {
			t.Errorf("listing a: #%d succeeded, want the 502", i+1)
		}
	}
	if err := list("a:"); err != nil {
		t.Errorf("listing a: after its faults: %v", err)
	}
}
