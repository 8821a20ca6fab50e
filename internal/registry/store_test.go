package registry_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/registrytest"
)

func TestMemory_Contract(t *testing.T) {
	t.Parallel()
	registrytest.RunContract(t, func(t *testing.T, now func() time.Time) registry.Store {
		return registry.NewMemory(now)
	})
}

func TestBolt_Contract(t *testing.T) {
	t.Parallel()
	registrytest.RunContract(t, func(t *testing.T, now func() time.Time) registry.Store {
		return mustOpenBolt(t, filepath.Join(t.TempDir(), "registry.db"), now)
	})
}

func TestFaulty_NoFaults_Contract(t *testing.T) {
	t.Parallel()
	registrytest.RunContract(t, func(t *testing.T, now func() time.Time) registry.Store {
		return registrytest.NewFaulty(registry.NewMemory(now))
	})
}

func mustOpenBolt(t *testing.T, path string, now func() time.Time) *registry.Bolt {
	t.Helper()
	b, err := registry.OpenBolt(path, now)
	if err != nil {
		t.Fatalf("OpenBolt: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func TestCheckPair_Limits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		pair registry.Pair
		ok   bool
	}{
		{"plain", registry.Pair{Key: "policy:학칙", Value: []byte("{}")}, true},
		{"key 512 bytes", registry.Pair{Key: strings.Repeat("k", 512)}, true},
		{"key 513 bytes", registry.Pair{Key: strings.Repeat("k", 513)}, false},
		{"empty key", registry.Pair{Key: ""}, false},
		{"dot", registry.Pair{Key: "."}, false},
		{"dot dot", registry.Pair{Key: ".."}, false},
		{"three dots", registry.Pair{Key: "..."}, true},
		{"invalid utf-8", registry.Pair{Key: "policy:\xc3"}, false},
		{"value 25 MiB", registry.Pair{Key: "k", Value: make([]byte, policy.MaxValueBytes)}, true},
		{"value 25 MiB + 1", registry.Pair{Key: "k", Value: make([]byte, policy.MaxValueBytes+1)}, false},
		{"metadata 1024 bytes", registry.Pair{Key: "k", Metadata: json.RawMessage(`"` + strings.Repeat("m", 1022) + `"`)}, true},
		{"metadata 1025 bytes", registry.Pair{Key: "k", Metadata: json.RawMessage(`"` + strings.Repeat("m", 1023) + `"`)}, false},
		{"metadata not JSON", registry.Pair{Key: "k", Metadata: json.RawMessage(`{sha}`)}, false},
		{"ttl 60s", registry.Pair{Key: "k", TTL: time.Minute}, true},
		{"ttl 59s", registry.Pair{Key: "k", TTL: 59 * time.Second}, false},
		{"ttl 1ns", registry.Pair{Key: "k", TTL: 1}, false},
		{"ttl negative", registry.Pair{Key: "k", TTL: -time.Hour}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := registry.CheckPair(tc.pair)
			if tc.ok && err != nil {
				t.Fatalf("CheckPair: %v, want ok", err)
			}
			if !tc.ok && !errors.Is(err, policy.ErrTooLarge) {
				t.Fatalf("CheckPair: %v, want policy.ErrTooLarge", err)
			}
		})
	}
}

func FuzzCheckKey(f *testing.F) {
	for _, k := range append(registrytest.OddKeys, "", ".", "..", "\xff", strings.Repeat("가", 171)) {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		err := registry.CheckKey(key)
		valid := key != "" && key != "." && key != ".." && len(key) <= policy.MaxKeyBytes && strings.ToValidUTF8(key, "\ufffd") == key
		if valid != (err == nil) {
			t.Fatalf("CheckKey(%q) = %v, want valid=%v", key, err, valid)
		}
		if err != nil && !errors.Is(err, policy.ErrTooLarge) {
			t.Fatalf("CheckKey(%q) = %v, want policy.ErrTooLarge", key, err)
		}
	})
}
