package cloudflare_test

import (
	"encoding/json"
	"net/http"
	"testing"

	cf "github.com/cloudflare/cloudflare-go"
	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
)

func TestFake_Faults_CountsWhatItInjected(t *testing.T) {
	t.Parallel()
	f, api, _ := mustClient(t, "tok")
	f.FailNext(cloudflaretest.ServerError(http.StatusBadGateway))
	f.SetRates(cloudflaretest.Rates{RateLimit: 0.3, ServerError: 0.2})
	failed := 0
	for range 40 {
		if _, err := api.ListWorkersKVKeys(t.Context(), rc, cf.ListWorkersKVsParams{NamespaceID: "ns"}); err != nil {
			failed++
		}
	}
	f.SetRates(cloudflaretest.Rates{})
	f.FailKeys("b")
	resp, err := api.Raw(t.Context(), http.MethodPut, "/accounts/acc/storage/kv/namespaces/ns/bulk",
		[]byte(`[{"key":"a","value":"1"},{"key":"b","value":"2"}]`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		UnsuccessfulKeys []string `json:"unsuccessful_keys"`
	}
	if err := json.Unmarshal(resp.Result, &res); err != nil {
		t.Fatal(err)
	}
	got := f.Faults()
	if got.Next != 1 || got.RateLimit == 0 || got.ServerError == 0 || got.Hang != 0 {
		t.Errorf("faults = %+v, want 1 queued, some 429s and 503s, no hangs", got)
	}
	if got.Next+got.RateLimit+got.ServerError != failed {
		t.Errorf("faults = %+v, but %d requests failed", got, failed)
	}
	if got.UnsuccessfulKeys != 1 || !cmp.Equal(res.UnsuccessfulKeys, []string{"b"}) {
		t.Errorf("unsuccessful keys counted %d, answered %v", got.UnsuccessfulKeys, res.UnsuccessfulKeys)
	}
}
