//go:build heapprof

package heapprof

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

func init() {
	dir := os.Getenv("HEAPPROF_DIR")
	if dir == "" {
		return
	}
	runtime.MemProfileRate = 8 << 10 // finer than the default 512 KiB: a batch's values are small
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "heapprof:", err)
		return
	}
	go writeHeapProfiles(dir)
}

// writeHeapProfiles writes the heap profile once after each GC, as long as
// the process runs (a profile shows the heap as of the last GC).
func writeHeapProfiles(dir string) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	var last uint64
	for {
		time.Sleep(2 * time.Millisecond)
		metrics.Read(s)
		if n := s[1].Value.Uint64(); n != last {
			last = n
			name := fmt.Sprintf("%d-gc%03d-live%dMB.pprof", os.Getpid(), n, s[0].Value.Uint64()>>20)
			f, err := os.Create(filepath.Join(dir, name))
			if err != nil {
				continue
			}
			_ = pprof.Lookup("heap").WriteTo(f, 0)
			_ = f.Close()
		}
	}
}
