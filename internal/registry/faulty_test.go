package registry_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/registrytest"
)

func TestFaulty_FailKeys_OnlyThoseKeys(t *testing.T) {
	t.Parallel()
	f := registrytest.NewFaulty(registry.NewMemory(nil))
	boom := errors.New("boom")
	f.FailKeys(map[string]error{"policy:b": boom, "policy:c": boom})
	out := f.Put(t.Context(), []registry.Pair{
		{Key: "policy:a", Value: []byte("a")},
		{Key: "policy:b", Value: []byte("b")},
		{Key: "policy:c", Value: []byte("c")},
	})
	if len(out) != 2 || !errors.Is(out["policy:b"], boom) || !errors.Is(out["policy:c"], boom) {
		t.Fatalf("Put outcome = %v, want policy:b and policy:c failing with boom", out)
	}
	if diff := cmp.Diff([]string{"policy:a"}, registrytest.Keys(registrytest.MustList(t, f, ""))); diff != "" {
		t.Errorf("stored (-want +got):\n%s", diff)
	}
	out = f.Delete(t.Context(), []string{"policy:a", "policy:b"})
	if len(out) != 1 || !errors.Is(out["policy:b"], boom) {
		t.Fatalf("Delete outcome = %v, want policy:b failing", out)
	}
	f.FailKeys(nil)
	registrytest.MustPut(t, f, registry.Pair{Key: "policy:b", Value: []byte("b")})
}

func TestFaulty_FailCall_NthOnly(t *testing.T) {
	t.Parallel()
	f := registrytest.NewFaulty(registry.NewMemory(nil))
	boom := errors.New("boom")
	f.FailCall(registrytest.Put, 2, boom)
	registrytest.MustPut(t, f, registry.Pair{Key: "a", Value: []byte("a")})
	out := f.Put(t.Context(), []registry.Pair{{Key: "b", Value: []byte("b")}, {Key: "c", Value: []byte("c")}})
	if len(out) != 2 || !errors.Is(out["b"], boom) || !errors.Is(out["c"], boom) {
		t.Fatalf("second Put = %v, want every key failing with boom", out)
	}
	registrytest.MustPut(t, f, registry.Pair{Key: "d", Value: []byte("d")})
	if diff := cmp.Diff([]string{"a", "d"}, registrytest.Keys(registrytest.MustList(t, f, ""))); diff != "" {
		t.Errorf("stored (-want +got):\n%s", diff)
	}
	if got := f.Calls(registrytest.Put); got != 3 {
		t.Errorf("Put calls = %d, want 3", got)
	}
	// Two real Puts and one List reached memory; the failed Put counts as a request.
	if got := f.Usage().Requests; got != 4 {
		t.Errorf("Requests = %d, want 4", got)
	}
}

func TestFaulty_FailGetAndList(t *testing.T) {
	t.Parallel()
	f := registrytest.NewFaulty(registry.NewMemory(nil))
	registrytest.MustPut(t, f, registry.Pair{Key: "a", Value: []byte("a")})
	boom := errors.New("boom")
	f.FailGet(boom)
	f.FailList(boom)
	if _, err := f.Get(t.Context(), "a"); !errors.Is(err, boom) {
		t.Errorf("Get: err = %v, want boom", err)
	}
	if _, err := f.List(t.Context(), ""); !errors.Is(err, boom) {
		t.Errorf("List: err = %v, want boom", err)
	}
	f.FailGet(nil)
	f.FailList(nil)
	registrytest.MustGet(t, f, "a")
	f.FailCall(registrytest.Get, 3, policy.ErrRateLimited)
	if _, err := f.Get(t.Context(), "a"); !errors.Is(err, policy.ErrRateLimited) {
		t.Errorf("third Get: err = %v, want ErrRateLimited", err)
	}
}

func TestFaulty_LogAndListKeysOnly(t *testing.T) {
	t.Parallel()
	f := registrytest.NewFaulty(registry.NewMemory(nil))
	registrytest.MustPut(t, f, registry.Pair{Key: "policy:a", Value: []byte("a")}, registry.Pair{Key: "queue:a", Value: []byte("q")})
	f.ListKeysOnly(true)
	items := registrytest.MustList(t, f, "policy:")
	if len(items) != 1 || items[0].Value != nil {
		t.Fatalf("List = %+v, want one item without value", items)
	}
	registrytest.MustGet(t, f, "policy:a")
	if out := f.Delete(t.Context(), []string{"queue:a"}); out != nil {
		t.Fatal(out)
	}
	want := []registrytest.Call{
		{Method: registrytest.Put, Keys: []string{"policy:a", "queue:a"}},
		{Method: registrytest.List, Prefix: "policy:"},
		{Method: registrytest.Get, Keys: []string{"policy:a"}},
		{Method: registrytest.Delete, Keys: []string{"queue:a"}},
	}
	if diff := cmp.Diff(want, f.Log()); diff != "" {
		t.Errorf("Log (-want +got):\n%s", diff)
	}
}

func TestFaulty_Kill_EverythingFailsAfterTheGivenWrites(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := registrytest.NewFaulty(registry.NewMemory(nil))
	registrytest.MustPut(t, f, registry.Pair{Key: "a", Value: []byte("1")})
	f.Kill(1)
	if _, err := f.Get(ctx, "a"); err != nil {
		t.Fatalf("a read before the last write lands: %v", err)
	}
	if errs := f.Put(ctx, []registry.Pair{{Key: "b", Value: []byte("2")}}); errs != nil {
		t.Fatalf("the one write allowed: %v", errs)
	}
	if errs := f.Put(ctx, []registry.Pair{{Key: "c", Value: []byte("3")}}); !errors.Is(errs["c"], registrytest.ErrKilled) {
		t.Fatalf("a write after the kill: %v", errs)
	}
	if _, err := f.Get(ctx, "a"); !errors.Is(err, registrytest.ErrKilled) {
		t.Fatalf("a read after the kill: %v", err)
	}
	f.Revive()
	if _, err := f.Get(ctx, "c"); !errors.Is(err, policy.ErrNotFound) {
		t.Fatalf("the killed write landed: %v", err)
	}
}
