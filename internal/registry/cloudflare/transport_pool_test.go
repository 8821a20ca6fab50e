package cloudflare

import (
	"net/http"
	"testing"
)

func TestPooledTransport_KeepsAConnectionPerWriteInFlight(t *testing.T) {
	t.Parallel()
	tr, ok := pooledTransport().(*http.Transport)
	if !ok {
		t.Fatalf("transport %T, want an *http.Transport", pooledTransport())
	}
	if tr.MaxIdleConnsPerHost < 32 {
		t.Fatalf("transport %T keeps %d idle connections a host; want one for each of up to 32 writes in flight", tr, tr.MaxIdleConnsPerHost)
	}
	if http.DefaultTransport.(*http.Transport).MaxIdleConnsPerHost == tr.MaxIdleConnsPerHost {
		t.Error("the default transport was changed instead of a copy")
	}
}
