package registry_test

import (
	"errors"
	"testing"

	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/registrytest"
)

func TestFaulty_Injected_CountsCallsAndKeys(t *testing.T) {
	t.Parallel()
	f := registrytest.NewFaulty(registry.NewMemory(nil))
	boom := errors.New("boom")
	f.FailKeys(map[string]error{"policy:b": boom})
	f.FailCall(registrytest.Delete, 1, boom)
	f.Put(t.Context(), []registry.Pair{{Key: "policy:a", Value: []byte("a")}, {Key: "policy:b", Value: []byte("b")}})
	f.Delete(t.Context(), []string{"policy:a", "policy:c"}) // fails as a whole
	f.Delete(t.Context(), []string{"policy:b"})
	if got, want := f.Injected(), (registrytest.Injected{Calls: 1, Keys: 2}); got != want {
		t.Errorf("Injected() = %+v, want %+v", got, want)
	}
}
