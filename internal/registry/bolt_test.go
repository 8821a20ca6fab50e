package registry_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/registrytest"
)

func TestBolt_Reopen_KeepsData(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
	path := filepath.Join(t.TempDir(), "registry.db")
	mustOpenBolt(t, path, nil)
	if _, err := registry.OpenBolt(path, nil); err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("second OpenBolt: err = %v, want an in-use error", err)
	}
}

func TestBolt_MissingDirectory_ClearError(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
	b := mustOpenBolt(t, filepath.Join(t.TempDir(), "registry.db"), nil)
	for _, raw := range [][]byte{{}, {9, 0, 0}, {1, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 'x'}} {
		if err := b.PutRaw("policy:bad", raw); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Get(t.Context(), "policy:bad"); err == nil || errors.Is(err, policy.ErrNotFound) {
			t.Errorf("Get corrupt %v: err = %v, want a decode error", raw, err)
		}
		// A listing holds the key, its record as stored, which no reader
		// decodes: the key is unreadable (registry.DecodeError names it), not
		// the listing (one damaged record failed every full sync).
		items, err := b.List(t.Context(), "policy:")
		if err != nil {
			t.Errorf("List with corrupt %v: %v, want the other keys and this one unreadable", raw, err)
		}
		if i := slices.IndexFunc(items, func(it registry.Item) bool { return it.Key == "policy:bad" }); i < 0 || !bytes.Equal(items[i].Value, raw) {
			t.Errorf("List with corrupt %v: %v, want policy:bad with its record as stored", raw, items)
		}
		if _, problems, err := registry.New(b).Policies(t.Context()); err != nil || problems["policy:bad"] == nil {
			t.Errorf("Policies with corrupt %v: %v, %v; want policy:bad unreadable", raw, problems, err)
		}
		// A write still works around a value it cannot read.
		registrytest.MustPut(t, b, registry.Pair{Key: "policy:good", Value: []byte("g")})
	}
}

func TestBolt_ReaderWhileWriterOpen_SeesItsWrites(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "registry.db")
	w := mustOpenBolt(t, path, nil)
	registrytest.MustPut(t, w, registry.Pair{Key: "policy:학칙", Value: []byte("v1")})

	r, err := registry.OpenBoltReadOnly(path, nil)
	if err != nil {
		t.Fatalf("OpenBoltReadOnly while a writer has the file: %v", err)
	}
	defer r.Close()
	if got, err := r.Get(t.Context(), "policy:학칙"); err != nil || string(got) != "v1" {
		t.Fatalf("reader Get = %q, %v; want v1", got, err)
	}
	// The writer goes on writing while the reader is open, and the reader
	// sees each write.
	registrytest.MustPut(t, w, registry.Pair{Key: "policy:학칙", Value: []byte("v2")}, registry.Pair{Key: "policy:새 규정", Value: []byte("n")})
	if items := registrytest.MustList(t, r, "policy:"); len(items) != 2 || string(items[1].Value) != "v2" {
		t.Errorf("reader List after the writer's put = %+v, want 새 규정 and 학칙=v2", items)
	}
	out := r.Put(t.Context(), []registry.Pair{{Key: "policy:x", Value: []byte("x")}})
	if !errors.Is(out["policy:x"], registry.ErrReadOnly) {
		t.Errorf("a read-only Put: %v, want ErrReadOnly", out)
	}
	if out := r.Delete(t.Context(), []string{"policy:학칙"}); !errors.Is(out["policy:학칙"], registry.ErrReadOnly) {
		t.Errorf("a read-only Delete: %v, want ErrReadOnly", out)
	}
}

func TestBolt_SecondWriter_RefusedNamingTheHolder(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "registry.db")
	first := mustOpenBolt(t, path, nil)
	_, err := registry.OpenBoltTimeout(path, nil, 100*time.Millisecond)
	var inUse *registry.InUseError
	if !errors.As(err, &inUse) || !errors.Is(err, registry.ErrInUse) {
		t.Fatalf("second writer: err = %v, want an *InUseError", err)
	}
	host, _ := os.Hostname()
	if inUse.Holder == nil || inUse.Holder.PID != os.Getpid() || inUse.Holder.Host != host {
		t.Errorf("holder = %+v, want pid %d on %s", inUse.Holder, os.Getpid(), host)
	}
	if want := fmt.Sprintf("pid %d on %s", os.Getpid(), host); !strings.Contains(err.Error(), want) {
		t.Errorf("err = %q, want it to name the holder (%s)", err, want)
	}
	if h, err := registry.BoltHolder(path); err != nil || h == nil || h.PID != os.Getpid() {
		t.Errorf("BoltHolder while held = %+v, %v", h, err)
	}
	// Once the first lets go, the next writer gets in, and nobody is named.
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if h, err := registry.BoltHolder(path); err != nil || h != nil {
		t.Errorf("BoltHolder after close = %+v, %v; want none", h, err)
	}
	mustOpenBolt(t, path, nil)
}

func TestBolt_ReadOnlyFile_CanBeListedAndIsNotChanged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "registry.db")
	w := mustOpenBolt(t, path, nil)
	registrytest.MustPut(t, w, registry.Pair{Key: "policy:학칙", Value: []byte("v")})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })

	r, err := registry.OpenBoltReadOnly(path, nil)
	if err != nil {
		t.Fatalf("OpenBoltReadOnly on a read-only file: %v", err)
	}
	if items := registrytest.MustList(t, r, ""); len(items) != 1 || items[0].Key != "policy:학칙" {
		t.Errorf("List = %+v", items)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("reading changed the registry file")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("reading left files beside the registry: %v", entries)
	}
}

func TestBolt_ReadOnlyMissingFile_ErrorCreatesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "registry.db")
	_, err := registry.OpenBoltReadOnly(path, nil)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Fatalf("OpenBoltReadOnly on a missing file: %v, want not-exist naming %s", err, path)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a read-only open created %v", entries)
	}
}

func TestBolt_WriterCloses_LockFileGone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "registry.db")
	b := mustOpenBolt(t, path, nil)
	if _, err := os.Stat(path + ".lock"); err != nil {
		t.Fatalf("no lock file while writing: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".lock"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("lock file left after close: %v", err)
	}
}

// BenchmarkBolt_Get measures one read, which opens the file for itself (so
// that a reader in another process can work between two operations):
//
//	go test -run '^$' -bench Bolt_ ./internal/registry
func BenchmarkBolt_Get(b *testing.B) {
	path := filepath.Join(b.TempDir(), "registry.db")
	s, err := registry.OpenBolt(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if out := s.Put(b.Context(), []registry.Pair{{Key: "policy:학칙", Value: []byte(`{"sha":"a"}`)}}); out != nil {
		b.Fatal(out)
	}
	for b.Loop() {
		if _, err := s.Get(b.Context(), "policy:학칙"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBolt_Put50 measures a batch of 50 writes, one transaction.
func BenchmarkBolt_Put50(b *testing.B) {
	path := filepath.Join(b.TempDir(), "registry.db")
	s, err := registry.OpenBolt(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	pairs := make([]registry.Pair, 50)
	for i := range pairs {
		pairs[i] = registry.Pair{Key: fmt.Sprintf("policy:규정 %02d", i), Value: []byte(`{"sha":"a"}`)}
	}
	for b.Loop() {
		if out := s.Put(b.Context(), pairs); out != nil {
			b.Fatal(out)
		}
	}
}

// TestBolt_LeaseOfAKilledWriter_EndedOnOpen: a run killed while it held the
// lease left it holding for its TTL; the next writer holds the file's lock,
// which proves that run is gone, so the lease no longer keeps it out — but
// it is not released: the next run still sees a run that did not finish.
func TestBolt_LeaseOfAKilledWriter_EndedOnOpen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "registry.db")
	clock := registrytest.NewClock(registrytest.Epoch)
	b := mustOpenBolt(t, path, clock.Now)
	reg := registry.New(b)
	if _, err := reg.TakeLease(t.Context(), nil, "killed run", clock.Now(), 6*time.Minute); err != nil {
		t.Fatal(err)
	}
	_ = b.Close() // its process died: the lock file's flock went with it
	clock.Advance(time.Minute)

	reg = registry.New(mustOpenBolt(t, path, clock.Now))
	held, err := reg.Lease(t.Context())
	if err != nil || held == nil || held.Owner != "killed run" || held.Holds(clock.Now()) || held.Released() {
		t.Fatalf("lease after the writer died = %+v, %v; want it ended, not released", held, err)
	}
	if _, err := reg.TakeLease(t.Context(), held, "next run", clock.Now(), 6*time.Minute); err != nil {
		t.Errorf("the next run is kept out by a dead run's lease: %v", err)
	}
}
