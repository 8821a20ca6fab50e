package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/registry"
)

// Reads never write (README.md, "Operate"): list, status and the
// other reads open the registry file read-only, create nothing and work
// while a sync has it; a second writer is told who holds it.

var reads = [][]string{{"list"}, {"status"}, {"queue", "list"}, {"deadletter", "list"}, {"lease", "show"}}

func TestRead_MissingRegistry_ErrorNamesRegistryPath_CreatesNothing(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	changes := [][]string{{"deadletter", "retry", "학칙"}, {"deadletter", "retry", "--all"}, {"deadletter", "drop", "학칙", "--yes"}, {"lease", "release", "--id", "x", "--yes"}}
	for _, args := range append(reads, changes...) {
		r := w.run(args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "REGISTRY_PATH") || !strings.Contains(r.stderr, w.db) {
			t.Errorf("%v on a missing registry: exit %d, stderr %q; want 2 naming REGISTRY_PATH and the file", args, r.code, r.stderr)
		}
	}
	if entries, _ := os.ReadDir(filepath.Dir(w.db)); len(entries) != 0 {
		t.Errorf("reading a missing registry created %v", entries)
	}
}

func TestRead_WhileASyncHoldsTheFile_Works_SecondWriterRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.sync(0)
	w.repo.Write("규정/새 규정.md", "# 새 규정\n")
	w.repo.Commit("add")
	// a sync in progress, as far as the file can tell
	running, err := registry.OpenBolt(w.db, w.clock)
	if err != nil {
		t.Fatal(err)
	}
	defer running.Close()
	host, _ := os.Hostname()
	holder := fmt.Sprintf("pid %d on %s", os.Getpid(), host)

	for _, args := range append(reads, []string{"sync", "--dry-run"}) {
		if r := w.run(args...); r.code != exitOK {
			t.Errorf("%v while a sync runs: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	if r := w.run("status"); !strings.Contains(r.stdout, "writer         "+holder) {
		t.Errorf("status does not name the writer (%s):\n%s", holder, r.stdout)
	}
	if r := w.run("sync", "--dry-run"); !strings.Contains(r.stdout, "Plan: 1 to add") {
		t.Errorf("dry run beside a sync:\n%s", r.stdout)
	}
	for _, args := range [][]string{{"sync"}, {"deadletter", "retry", "--all"}} {
		r := w.run(args...)
		if r.code != exitFailed || !strings.Contains(r.stderr, "in use by another process ("+holder) || strings.Contains(r.stderr, "config") {
			t.Errorf("%v beside a sync: exit %d, stderr %q; want 1 naming %s", args, r.code, r.stderr, holder)
		}
	}
}

func TestRead_ReadOnlyRegistryFile_Listed(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.sync(0)
	before, err := os.ReadFile(w.db)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(w.db)
	if err := os.Chmod(w.db, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
	if r := w.run("list"); r.code != exitOK || !strings.Contains(r.stdout, "3 policies") {
		t.Errorf("list of a read-only file: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := w.run("status"); r.code != exitOK {
		t.Errorf("status of a read-only file: exit %d\n%s", r.code, r.stderr)
	}
	after, err := os.ReadFile(w.db)
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
