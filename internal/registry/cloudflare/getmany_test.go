package cloudflare_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
)

func TestStore_GetMany_MetadataInOneRequest_AbsentKeysAbsent(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, nil)
	lastRun := `{"timestamp":"2025-03-01T16:00:00Z","status":"success","conflicts":["학칙"]}`
	w.fake.Set(registry.LastCommitKey, []byte("0123456789abcdef0123456789abcdef01234567"), nil, 0)
	w.fake.Set(registry.LastRunKey, []byte(lastRun), nil, 0)

	// as the registry finds it: an optional interface of its own
	var getter interface {
		GetMany(ctx context.Context, keys []string) (map[string][]byte, error)
	} = w.store
	got, err := getter.GetMany(t.Context(), []string{registry.LastCommitKey, registry.LastRunKey, registry.LeaseKey})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{
		registry.LastCommitKey: []byte("0123456789abcdef0123456789abcdef01234567"),
		registry.LastRunKey:    []byte(lastRun),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GetMany (-want +got):\n%s", diff)
	}
	if n := w.fake.Requests(cloudflaretest.BulkGet); n != 1 || w.fake.TotalRequests() != 1 {
		t.Errorf("requests: %d bulk gets of %d, want one request", n, w.fake.TotalRequests())
	}
	if got := w.store.Usage().Requests; got != 1 {
		t.Errorf("Usage().Requests = %d, want 1", got)
	}
}

func TestStore_GetMany_Over100Keys_OneRequestPer100(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, nil)
	var keys []string
	want := map[string][]byte{}
	for i := range 250 {
		k := fmt.Sprintf("queue:규정 %03d", i)
		keys = append(keys, k)
		if i%2 == 0 {
			w.fake.Set(k, []byte(fmt.Sprintf(`{"n":%d}`, i)), nil, 0)
			want[k] = []byte(fmt.Sprintf(`{"n":%d}`, i))
		}
	}
	got, err := w.store.GetMany(t.Context(), append(keys, keys[0])) // a repeated key is read once
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GetMany (-want +got):\n%s", diff)
	}
	if n := w.fake.Requests(cloudflaretest.BulkGet); n != 3 {
		t.Errorf("bulk gets = %d, want 3", n)
	}
}

func TestStore_GetMany_BadKey_TooLargeNoRequest(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, nil)
	_, err := w.store.GetMany(t.Context(), []string{"ok", strings.Repeat("k", 513)})
	if !errors.Is(err, policy.ErrTooLarge) {
		t.Errorf("err = %v, want ErrTooLarge", err)
	}
	if got, err := w.store.GetMany(t.Context(), nil); err != nil || len(got) != 0 {
		t.Errorf("GetMany(nil) = %v, %v; want empty", got, err)
	}
	if n := w.fake.TotalRequests(); n != 0 {
		t.Errorf("requests = %d, want 0", n)
	}
}

func TestStore_GetMany_5xxRetried_WrongTokenConfigError(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, nil)
	w.fake.Set("k", []byte("v"), nil, 0)
	w.fake.FailNext(cloudflaretest.ServerError(502))
	got, err := w.store.GetMany(t.Context(), []string{"k"})
	if err != nil || string(got["k"]) != "v" {
		t.Fatalf("GetMany = %q, %v; want v after a retried 502", got, err)
	}
	if got, want := w.store.Usage().Requests, int64(w.fake.TotalRequests()); got != 2 || got != want {
		t.Errorf("Usage().Requests = %d, the fake saw %d, want 2", got, want)
	}

	bad := mustWorld(t, nil, func(c *cloudflare.Config) { c.APIToken = "wrong-" + secretToken })
	_, err = bad.store.GetMany(t.Context(), []string{"k"})
	if !errors.Is(err, policy.ErrConfig) || strings.Contains(err.Error(), secretToken) {
		t.Errorf("wrong token: err = %v, want ErrConfig without the token", err)
	}
}
