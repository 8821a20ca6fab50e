package cloudflare_test

import (
	"net/http"
	"testing"

	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
)

// A 200 whose envelope says success:false (result null) is not an answer:
// a listing must not come back empty, nor a bulk get with every key absent
// (review: cloudflare-go's Raw does not check success; only the bulk write
// did).
func TestStore_200SuccessFalse_ListAndBulkGetFail(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, nil)
	if out := w.store.Put(t.Context(), []registry.Pair{
		{Key: "policy:a", Value: []byte(`{"policyName":"a"}`), Metadata: []byte(`{"sha":"x"}`)},
		{Key: registry.LastCommitKey, Value: []byte("abc")},
		{Key: registry.LeaseKey, Value: []byte(`{"owner":"other"}`)},
	}); out != nil {
		t.Fatal(out)
	}
	notOK := cloudflaretest.Fault{Status: http.StatusOK, Code: cloudflaretest.CodeInternal, Message: "internal error"}

	w.fake.FailNext(notOK)
	items, err := w.store.List(t.Context(), "policy:")
	if err == nil {
		t.Errorf("List after a 200 with success:false: %d items, no error; want an error (an empty listing is taken for an empty registry)", len(items))
	}

	w.fake.FailNext(notOK)
	got, err := w.store.GetMany(t.Context(), []string{registry.LastCommitKey, registry.LastRunKey, registry.LeaseKey})
	if err == nil {
		t.Errorf("GetMany after a 200 with success:false: %d keys, no error; want an error (lastCommit and the lease read as absent: a first run over another's lease)", len(got))
	}
}
