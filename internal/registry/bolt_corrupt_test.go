package registry_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/registrytest"
)

// wayOut is what a corrupt registry file's error tells the operator to do.
const wayOut = "move it aside and run `syncjob sync --full`"

// mustRegistryFile returns the bytes of a real registry file of a few
// hundred keys (some values spanning overflow pages, some with a TTL from
// registrytest.Epoch), the caller's to change.
func mustRegistryFile(t *testing.T) []byte {
	t.Helper()
	raw, err := registryFile()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(raw)
}

// registryFile writes mustRegistryFile's file once for the tests that
// damage it: under -race, writing its 600 keys cost about as much as one
// of those tests reading its damaged file.
var registryFile = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "registry-file-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "registry.db")
	b, err := registry.OpenBolt(path, registrytest.NewClock(registrytest.Epoch).Now)
	if err != nil {
		return nil, err
	}
	var pairs []registry.Pair
	for i := range 300 {
		name := fmt.Sprintf("규정 %03d", i)
		pairs = append(pairs,
			registry.Pair{Key: "policy:" + name, Value: []byte(fmt.Sprintf(`{"policyName":%q,"sha":"%040d"}`, name, i)), Metadata: []byte(`{"sha":"x"}`)},
			registry.Pair{Key: "queue:" + name, Value: []byte(fmt.Sprintf(`{"policyName":%q,"errorMessage":%q}`, name, strings.Repeat("q", i*7)))},
		)
	}
	pairs = append(pairs,
		registry.Pair{Key: "metadata:sync:lastCommit", Value: []byte(strings.Repeat("a", 40))},
		registry.Pair{Key: "metadata:sync:lastRun", Value: []byte(`{"status":"success"}`)},
		registry.Pair{Key: "metadata:sync:run:1:a", Value: []byte(strings.Repeat("r", 20000)), TTL: time.Hour},
	)
	if out := b.Put(context.Background(), pairs); out != nil {
		_ = b.Close()
		return nil, fmt.Errorf("put: %v", out)
	}
	if err := b.Close(); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
})

// usedBytes is how much of a registry file its pages use, by its newest
// meta page (bbolt's layout: a 16-byte page header, then magic, version,
// page size, flags, the root bucket, the freelist page, the high-water page
// id, the transaction id).
func usedBytes(raw []byte) int {
	meta := func(at int) (pgid, txid uint64, pageSize int) {
		m := raw[at+16:]
		return binary.LittleEndian.Uint64(m[40:48]), binary.LittleEndian.Uint64(m[48:56]), int(binary.LittleEndian.Uint32(m[8:12]))
	}
	pgid, txid, pageSize := meta(0)
	if p, tx, _ := meta(pageSize); tx > txid {
		pgid = p
	}
	return int(pgid) * pageSize
}

// readAll does what list, status and a sync's first reads do on a registry
// file, read-only and as the writer; it returns the errors it met, and
// fails the test on a panic (a segfault ends the test binary: the same).
func readAll(t *testing.T, path string, now func() time.Time) (errs []error) {
	t.Helper()
	ctx := context.Background()
	use := func(b *registry.Bolt, write bool) {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("panic on %s: %v", path, p)
			}
		}()
		reg := registry.New(b)
		_, err := b.List(ctx, "")
		errs = append(errs, err)
		_, _, err = reg.Policies(ctx)
		errs = append(errs, err)
		_, err = reg.SyncState(ctx)
		errs = append(errs, err)
		_, err = reg.Queue(ctx)
		errs = append(errs, err)
		if write {
			out := b.Put(ctx, []registry.Pair{{Key: "policy:new", Value: []byte("{}")}})
			errs = append(errs, out["policy:new"])
		}
	}
	if b, err := registry.OpenBoltReadOnly(path, now); err != nil {
		errs = append(errs, err)
	} else {
		use(b, false)
		_ = b.Close()
	}
	if b, err := registry.OpenBolt(path, now); err != nil {
		errs = append(errs, err)
	} else {
		use(b, true)
		_ = b.Close()
	}
	// Whatever the writer met, it let go of the file: this process opens it again.
	if b, err := registry.OpenBoltReadOnly(path, now); err != nil {
		errs = append(errs, err)
	} else {
		_, err = b.List(ctx, "")
		errs = append(errs, err)
		_ = b.Close()
	}
	for _, err := range errs {
		if err != nil && strings.Contains(err.Error(), "busy") {
			t.Fatalf("%s left locked after an error: %v", path, err)
		}
	}
	return errs
}

// TestBolt_DamagedFile_ErrorsNeverPanics truncates and bit-flips a real
// registry file at many seeded offsets; opening, listing and reading it must
// end in errors (or, where the damage missed what is read, in data), never
// in a panic or a fault. A file cut short of its pages, or whose meta pages
// are both damaged, is an error naming the file and the way out.
// corruptSeeds is how many damaged files TestBolt_DamagedFile_ErrorsNeverPanics
// reads: 30 by default (10 of each kind of damage), 100 or more by hand
// (3,000 were read once without a panic).
var corruptSeeds = flag.Uint64("corrupt.seeds", 30, "registry: damaged registry files to read")

func TestBolt_DamagedFile_ErrorsNeverPanics(t *testing.T) {
	t.Parallel()
	clock := registrytest.NewClock(registrytest.Epoch)
	good := mustRegistryFile(t)
	used := usedBytes(good)
	dir := t.TempDir()
	goodPath := filepath.Join(dir, "good.db")
	if err := os.WriteFile(goodPath, good, 0o600); err != nil {
		t.Fatal(err)
	}
	damaged := 0
	for seed := range *corruptSeeds {
		rng := rand.New(rand.NewPCG(seed, 17))
		d := damage{size: len(good), patch: map[int]byte{}}
		var what string
		switch seed % 3 {
		case 0: // cut anywhere past the two meta pages, short of the pages in use
			d.size = 8192 + rng.IntN(used-8192)
			what = fmt.Sprintf("truncated to %d of %d bytes in use", d.size, used)
		case 1: // flip bits anywhere
			for range 1 + rng.IntN(8) {
				at := rng.IntN(len(good))
				b, ok := d.patch[at]
				if !ok {
					b = good[at]
				}
				d.patch[at] = b ^ 1<<rng.IntN(8)
			}
			what = "bits flipped"
		default: // overwrite a run of bytes past the meta pages
			at := 8192 + rng.IntN(used-8192-64)
			for i := range 64 {
				d.patch[at+i] = byte(rng.Uint32())
			}
			what = fmt.Sprintf("64 bytes overwritten at %d", at)
		}
		path := filepath.Join(dir, fmt.Sprintf("registry-%03d.db", seed))
		writeDamaged(t, path, goodPath, d)
		errs := readAll(t, path, clock.Now)
		if err := errors.Join(errs...); err != nil {
			damaged++
			if errors.Is(err, registry.ErrCorrupt) && (!strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), wayOut)) {
				t.Errorf("seed %d (%s): %v, want it to name %s and the way out", seed, what, err, path)
			}
		}
		if seed%3 == 0 {
			if err := errors.Join(errs...); !errors.Is(err, registry.ErrCorrupt) {
				t.Errorf("seed %d (%s): errors %v, want ErrCorrupt", seed, what, err)
			}
		}
	}
	t.Logf("%d of %d damaged files gave errors", damaged, *corruptSeeds)
}

// damage is a damaged copy of a registry file: its first size bytes, the
// byte at each offset of patch replaced.
type damage struct {
	size  int
	patch map[int]byte
}

// writeDamaged writes d of the file at good to path. The kernel copies the
// file, then the patched bytes are written over the copy: a megabyte copied
// and written through this process's memory for each damaged file cost a
// pass over its race-detector shadow each time.
func writeDamaged(t *testing.T, path, good string, d damage) {
	t.Helper()
	src, err := os.Open(good)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, io.LimitReader(src, int64(d.size))); err != nil {
		dst.Close()
		t.Fatal(err)
	}
	for at, b := range d.patch {
		if _, err := dst.WriteAt([]byte{b}, int64(at)); err != nil {
			dst.Close()
			t.Fatal(err)
		}
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestBolt_DamagedMetaPages_CorruptNamingTheWayOut(t *testing.T) {
	t.Parallel()
	clock := registrytest.NewClock(registrytest.Epoch)
	bad := mustRegistryFile(t)
	for _, meta := range []int{0, 4096} { // both meta pages' magic
		bad[meta+16] ^= 0x5a
	}
	path := filepath.Join(t.TempDir(), "registry.db")
	if err := os.WriteFile(path, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, open := range map[string]func(string, func() time.Time) (*registry.Bolt, error){
		"writer": registry.OpenBolt, "reader": registry.OpenBoltReadOnly,
	} {
		_, err := open(path, clock.Now)
		if !errors.Is(err, registry.ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), wayOut) {
			t.Errorf("%s: %v, want ErrCorrupt naming %s and the way out", name, err, path)
		}
	}
}

func TestBolt_EmptyFile_CorruptNotANewRegistry(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "registry.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, open := range map[string]func(string, func() time.Time) (*registry.Bolt, error){
		"writer": registry.OpenBolt, "reader": registry.OpenBoltReadOnly,
	} {
		_, err := open(path, nil)
		if !errors.Is(err, registry.ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "empty") {
			t.Errorf("%s: %v, want ErrCorrupt: the file is empty", name, err)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Errorf("the empty file was changed: %v, %v", fi, err)
	}
}
