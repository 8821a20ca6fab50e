package registry_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/registrytest"
)

func TestBolt_Reopen_KeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry.db")
	clock := registrytest.NewClock(registrytest.Epoch)
	b, err := registry.OpenBolt(path, clock.Now)
	if err != nil {
		t.Fatalf("OpenBolt: %v", err)
	}
	registrytest.MustPut(t, b,
		registry.Pair{Key: "policy:학칙", Value: []byte(`{"sha":"a"}`), Metadata: []byte(`{"sha":"a"}`)},
		registry.Pair{Key: "metadata:sync:run:1:a", Value: []byte("run"), TTL: time.Hour},
	)
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	b = mustOpenBolt(t, path, clock.Now)
	want := []registry.Item{
		{Key: "metadata:sync:run:1:a", Value: []byte("run"), Expiration: registrytest.Epoch.Add(time.Hour)},
		{Key: "policy:학칙", Value: []byte(`{"sha":"a"}`), Metadata: []byte(`{"sha":"a"}`)},
	}
	if diff := cmp.Diff(want, registrytest.MustList(t, b, "")); diff != "" {
		t.Errorf("List after reopen (-want +got):\n%s", diff)
	}
}

func TestBolt_SecondOpen_InUseErrorFast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry.db")
	mustOpenBolt(t, path, nil)

	start := time.Now()
	_, err := registry.OpenBoltTimeout(path, nil, 100*time.Millisecond)
	if err == nil {
		t.Fatal("second open succeeded, want an in-use error")
	}
	if want := "registry file " + path + " is in use by another process"; !strings.Contains(err.Error(), want) {
		t.Errorf("err = %q, want it to say %q", err, want)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("second open took %s, want about the lock timeout", took)
	}
}

func TestBolt_DefaultLockTimeout_InUseError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry.db")
	mustOpenBolt(t, path, nil)
	if _, err := registry.OpenBolt(path, nil); err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("second OpenBolt: err = %v, want an in-use error", err)
	}
}

func TestBolt_MissingDirectory_ClearError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	path := filepath.Join(dir, "registry.db")
	_, err := registry.OpenBolt(path, nil)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "directory "+dir+" does not exist") {
		t.Fatalf("OpenBolt: err = %v, want directory %s does not exist", err, dir)
	}
	if _, statErr := os.Stat(dir); !errors.Is(statErr, fs.ErrNotExist) {
		t.Errorf("OpenBolt created %s", dir)
	}
}

func TestBolt_NotABoltFile_Error(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("not a database\n", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := registry.OpenBolt(path, nil)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("OpenBolt: err = %v, want an error naming %s", err, path)
	}
}

func TestBolt_Write_PurgesExpired(t *testing.T) {
	clock := registrytest.NewClock(registrytest.Epoch)
	b := mustOpenBolt(t, filepath.Join(t.TempDir(), "registry.db"), clock.Now)
	registrytest.MustPut(t, b,
		registry.Pair{Key: "metadata:sync:run:1:a", Value: []byte("a"), TTL: time.Minute},
		registry.Pair{Key: "metadata:sync:run:2:b", Value: []byte("b"), TTL: time.Hour},
		registry.Pair{Key: "policy:a", Value: []byte("a")},
	)
	clock.Advance(time.Minute)
	if out := b.Delete(t.Context(), []string{"policy:absent"}); out != nil {
		t.Fatalf("Delete: %v", out)
	}
	keys, err := b.RawKeys()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"metadata:sync:run:2:b", "policy:a"}, keys); diff != "" {
		t.Errorf("stored keys after a write (-want +got):\n%s", diff)
	}
}

func TestBolt_CorruptValue_ErrorNotPanic(t *testing.T) {
	b := mustOpenBolt(t, filepath.Join(t.TempDir(), "registry.db"), nil)
	for _, raw := range [][]byte{{}, {9, 0, 0}, {1, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 'x'}} {
		if err := b.PutRaw("policy:bad", raw); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Get(t.Context(), "policy:bad"); err == nil || errors.Is(err, policy.ErrNotFound) {
			t.Errorf("Get corrupt %v: err = %v, want a decode error", raw, err)
		}
		if _, err := b.List(t.Context(), "policy:"); err == nil {
			t.Errorf("List with corrupt %v: err = nil, want a decode error", raw)
		}
		// A write still works around a value it cannot read.
		registrytest.MustPut(t, b, registry.Pair{Key: "policy:good", Value: []byte("g")})
	}
}
