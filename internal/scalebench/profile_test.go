package scalebench

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/github"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
	"github.com/knue/syncjob/internal/syncer"
)

// profile runs a first and an incremental sync in-process, through
// syncer.Run on the adapters the program builds (profileSync), with a CPU profile and heap profiles,
// into -scale.profile. The program's goroutines carry the label
// side=program, so the fakes that share the process can be left out:
//
//	go tool pprof -top -tagfocus side=program DIR/policies=10000-first.cpu.pprof
//	go tool pprof -top -sample_index=alloc_space -base DIR/…-first.allocs-before.pprof DIR/…-first.allocs.pprof
//	go tool pprof -top -sample_index=inuse_space DIR/…-first.heap-peak.pprof
//
// Timings here are not the bench's: the profiler and the fakes share the
// process. The child-process runs are the measurements.
func (s *scaleSet) profile(b *testing.B, sr *scaleRepo, ghp *scaleProxy) {
	dir := *scaleProfile
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	cf := cloudflaretest.New(cloudflaretest.Config{AccountID: cfAccountID, NamespaceID: cfNamespaceID, Token: cfToken, Seed: cfSeed})
	defer cf.Close()
	cfp := newScaleProxy(b, cf.BaseURL(), *scaleLatency, cloudflareKind, nil, nil)
	env := map[string]string{
		"GITHUB_REPO":                "knue/policies",
		"GITHUB_API_URL":             ghp.URL() + "/",
		"CLOUDFLARE_ACCOUNT_ID":      cfAccountID,
		"CLOUDFLARE_KV_NAMESPACE_ID": cfNamespaceID,
		"CLOUDFLARE_API_TOKEN":       cfToken,
		"CLOUDFLARE_API_URL":         cfp.URL() + cloudflaretest.BasePath,
		"REGISTRY_PATH":              filepath.Join(b.TempDir(), "unused.db"),
		"LOG_FORMAT":                 "json",
		"BATCH_SIZE":                 strconv.Itoa(*scaleBatch),
	}
	for _, kv := range strings.Split(*scaleEnv, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	base := filepath.Join(dir, strings.ReplaceAll(s.name(), "/", "-"))
	sr.at(sr.base)
	profileRun(b, base+"-first", env)
	sr.at(sr.next)
	profileRun(b, base+"-incremental", env)
}

// profileRun runs "syncjob sync" in-process and writes name.cpu.pprof,
// name.allocs-before.pprof and name.allocs.pprof (allocations during the run
// are their difference) and name.heap-peak.pprof (the heap at the GC that
// saw the most live bytes).
func profileRun(b *testing.B, name string, env map[string]string) {
	write := func(file string, f func(*os.File) error) {
		out, err := os.Create(file)
		if err != nil {
			b.Fatal(err)
		}
		if err := f(out); err != nil {
			b.Fatal(err)
		}
		if err := out.Close(); err != nil {
			b.Fatal(err)
		}
	}
	write(name+".allocs-before.pprof", func(f *os.File) error { return pprof.Lookup("allocs").WriteTo(f, 0) })
	cpu, err := os.Create(name + ".cpu.pprof")
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		b.Fatal(err)
	}
	peak, stop := watchHeap()
	var stderr bytes.Buffer
	var runErr error
	pprof.Do(context.Background(), pprof.Labels("side", "program"), func(ctx context.Context) {
		runErr = profileSync(ctx, env, &stderr)
	})
	stop()
	pprof.StopCPUProfile()
	if err := cpu.Close(); err != nil {
		b.Fatal(err)
	}
	write(name+".allocs.pprof", func(f *os.File) error { return pprof.Lookup("allocs").WriteTo(f, 0) })
	write(name+".heap-peak.pprof", func(f *os.File) error { _, err := f.Write(peak.Bytes()); return err })
	_ = os.WriteFile(name+".log", stderr.Bytes(), 0o644)
	if runErr != nil {
		b.Errorf("profiled run %s: %v\n%s", name, runErr, lastLines(stderr.String(), 5))
	}
}

// watchHeap keeps the heap profile of the GC that saw the most live heap
// while it runs; stop ends it and the buffer then holds that profile.
func watchHeap() (peak *bytes.Buffer, stop func()) {
	peak = &bytes.Buffer{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var most uint64
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if live := sample[0].Value.Uint64(); live > most+most/20 {
				most = live
				peak.Reset()
				_ = pprof.Lookup("heap").WriteTo(peak, 0)
			}
		}
	}()
	return peak, func() { close(done); wg.Wait() }
}

// profileSync runs one sync as the program wires it (cmd/syncjob is a main
// package, which a bench cannot import): the GitHub source, the Cloudflare
// store and the syncer, configured from env, logging JSON to logs.
func profileSync(ctx context.Context, env map[string]string, logs io.Writer) error {
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	owner, repo, _ := strings.Cut(env["GITHUB_REPO"], "/")
	src, err := github.New(github.Config{Owner: owner, Repo: repo, Branch: "main", BaseURL: env["GITHUB_API_URL"], Logger: logger})
	if err != nil {
		return err
	}
	store, err := cloudflare.New(cloudflare.Config{
		AccountID: env["CLOUDFLARE_ACCOUNT_ID"], NamespaceID: env["CLOUDFLARE_KV_NAMESPACE_ID"],
		APIToken: env["CLOUDFLARE_API_TOKEN"], BaseURL: env["CLOUDFLARE_API_URL"], Logger: logger,
	})
	if err != nil {
		return err
	}
	defer store.Close()
	opt := syncer.Options{Trigger: syncer.TriggerCLI}
	opt.Concurrency, _ = strconv.Atoi(env["CONCURRENCY"])
	opt.BatchSize, _ = strconv.Atoi(env["BATCH_SIZE"])
	s := &syncer.Syncer{Source: src, Registry: registry.New(store), Repo: env["GITHUB_REPO"], Branch: "main", Logger: logger, Now: time.Now}
	_, err = s.Run(ctx, opt)
	return err
}
