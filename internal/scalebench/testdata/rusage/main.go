//go:build linux

// Command rusage runs a command and writes its peak resident set and CPU
// time as JSON; the scale bench (docs/bench.md) runs the syncjob binary
// through it.
//
//	rusage -out FILE [-cap KiB] -- command [args...]
//
// Why not read ru_maxrss in the bench itself: on Linux a process's
// ru_maxrss keeps the high-water mark of the memory it was forked with
// (exec records the old mm's peak, and Go spawns with CLONE_VM|CLONE_VFORK),
// so a child of the bench reports the bench's own peak — the fakes holding
// the whole registry — whenever that is larger. The command run from here
// inherits only this small process's peak (a few MiB).
//
// With -cap, the command is killed when its resident set passes cap KiB, so
// a program that holds every file in memory cannot take the machine down.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type report struct {
	MaxRSSKiB int64  `json:"maxrssKiB"`
	UserNs    int64  `json:"userNs"`
	SysNs     int64  `json:"sysNs"`
	Exit      int    `json:"exit"`
	Killed    string `json:"killed,omitempty"`
}

func main() {
	out := flag.String("out", "", "file to write the report to")
	capKiB := flag.Int64("cap", 0, "KiB; kill the command when its RSS passes it (0: no cap)")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: rusage -out FILE [-cap KiB] -- command [args...]")
		os.Exit(2)
	}
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // dies with us
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "rusage:", err)
		os.Exit(1)
	}
	var r report
	done := make(chan struct{})
	if *capKiB > 0 {
		go func() {
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
				}
				if rss := currentRSS(cmd.Process.Pid); rss > *capKiB {
					r.Killed = fmt.Sprintf("RSS %d MiB passed the cap of %d MiB", rss>>10, *capKiB>>10)
					_ = cmd.Process.Kill()
					return
				}
			}
		}()
	}
	err := cmd.Wait()
	close(done)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		fmt.Fprintln(os.Stderr, "rusage:", err)
		os.Exit(1)
	}
	ps := cmd.ProcessState
	r.Exit = ps.ExitCode()
	r.UserNs, r.SysNs = int64(ps.UserTime()), int64(ps.SystemTime())
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		r.MaxRSSKiB = ru.Maxrss // KiB on Linux
	}
	b, _ := json.Marshal(r)
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "rusage:", err)
		os.Exit(1)
	}
}

// currentRSS reads VmRSS (KiB) of a live process; 0 when unknown.
func currentRSS(pid int) int64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
