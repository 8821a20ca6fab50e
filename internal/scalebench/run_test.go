package scalebench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
)

// scaleResult is one run of the program (or of the minimal client) as the
// bench saw it.
type scaleResult struct {
	wall               time.Duration
	github, cloudflare int // requests at the proxies
	// the GitHub requests but the tree's listings, and those listings, each
	// the median of the repetitions' own (median only)
	ghBesidesTree, ghTrees int
	// windows is how many windows a first sync took (internal/syncer,
	// windows.go): each reads the archive once (median only)
	windows          int
	ghKinds, cfKinds map[string]int // by endpoint
	s3               int            // requests at the S3 proxy (-scale.mirror)
	s3Kinds          map[string]int // by operation
	ghConns, cfConns int            // connections the client opened
	// leaseExpired is how long the stored lease had expired while the run
	// still held it (see leaseWatch); leaseLongest its longest stretch
	leaseExpired, leaseLongest time.Duration
	// as the run's summary line reports them; -1 without one
	sumGitHub, sumCloudflare int
	cfStarts                 []time.Time // when each Cloudflare request reached the proxy
	ops                      int         // registry writes and deletes: billable writes + billable deletes
	rssKiB                   int64       // peak RSS of the process; -1 when unknown
	cpu                      time.Duration
	phases                   map[string]float64 // ms, from the summary line
	mode, status             string
	added, updated, deleted  int
	skipped                  int
	code                     int
	killed                   string // why the bench stopped the run
	stderr                   string
}

// scaleTarget is where the program runs: the proxies in front of the fakes.
type scaleTarget struct {
	gh, cf *scaleProxy
	s3     *scaleProxy // the content mirror's bucket; nil: no mirror
}

// scaleProgram runs the syncjob binary as a child process, so that its
// peak RSS is its own.
type scaleProgram struct {
	bin string
	// rusage is the helper (testdata/rusage) the binary runs under, which
	// reports its peak RSS and CPU time; "" off Linux (RSS unknown).
	rusage string
	extra  []string // KEY=VALUE added to its environment (-scale.env)
	memCap int64    // KiB: the helper kills a run whose RSS passes it
	logs   string   // folder to keep each run's stderr in; "" keeps none
}

// buildRusage builds the helper that reports a child's own peak RSS (see
// testdata/rusage for why the bench cannot read it itself); "" off Linux.
func buildRusage(b *testing.B, gotool string) string {
	b.Helper()
	if runtime.GOOS != "linux" {
		return ""
	}
	bin := filepath.Join(b.TempDir(), "rusage")
	if out, err := exec.Command(gotool, "build", "-o", bin, "./testdata/rusage").CombinedOutput(); err != nil {
		b.Fatalf("go build rusage: %v\n%s", err, out)
	}
	return bin
}

// sync runs "syncjob sync" with args against t and returns what it cost.
func (p scaleProgram) sync(tb testing.TB, t scaleTarget, name string, args ...string) scaleResult {
	tb.Helper()
	dir := tb.TempDir()
	report := filepath.Join(dir, "rusage.json")
	cmd := exec.Command(p.bin, append([]string{"sync"}, args...)...)
	if p.rusage != "" {
		cmd = exec.Command(p.rusage, append([]string{"-out", report, "-cap", strconv.FormatInt(p.memCap, 10), "--", p.bin, "sync"}, args...)...)
	}
	cmd.Dir = dir
	cmd.Env = append([]string{
		"HOME=" + dir,
		"TMPDIR=" + dir,
		"GITHUB_REPO=knue/policies",
		"GITHUB_BRANCH=main",
		"GITHUB_API_URL=" + t.gh.URL() + "/",
		"CLOUDFLARE_ACCOUNT_ID=" + cfAccountID,
		"CLOUDFLARE_KV_NAMESPACE_ID=" + cfNamespaceID,
		"CLOUDFLARE_API_TOKEN=" + cfToken,
		"CLOUDFLARE_API_URL=" + t.cf.URL() + cloudflaretest.BasePath,
		"REGISTRY_PATH=" + filepath.Join(dir, "unused.db"),
		"LOG_FORMAT=json",
	}, p.extra...)
	if t.s3 != nil {
		cmd.Env = append(cmd.Env, mirrorEnv(t.s3.URL())...)
		t.s3.take()
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t.gh.take()
	t.cf.take()
	if t.cf.lease != nil {
		t.cf.lease.take()
	}
	start := time.Now()
	err := cmd.Run()
	r := scaleResult{wall: time.Since(start), stderr: stderr.String(), sumGitHub: -1, sumCloudflare: -1, rssKiB: -1}
	if p.rusage == "" {
		r.code, r.cpu = cmd.ProcessState.ExitCode(), cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime()
	} else {
		var ru struct {
			MaxRSSKiB, UserNs, SysNs int64
			Exit                     int
			Killed                   string
		}
		b, rerr := os.ReadFile(report)
		if rerr == nil {
			rerr = json.Unmarshal(b, &ru)
		}
		if rerr != nil {
			tb.Fatalf("run %s: %v; rusage: %v\n%s", name, err, rerr, lastLines(stderr.String(), 5))
		}
		r.code, r.rssKiB, r.cpu, r.killed = ru.Exit, ru.MaxRSSKiB, time.Duration(ru.UserNs+ru.SysNs), ru.Killed
		if r.killed != "" {
			r.killed += " (-scale.memcap)"
		}
	}
	var ghLog, cfLog []scaleRequest
	r.ghKinds, ghLog, r.ghConns = t.gh.takeLog()
	r.cfKinds, cfLog, r.cfConns = t.cf.takeLog()
	r.github, r.cloudflare = total(r.ghKinds), total(r.cfKinds)
	for _, q := range cfLog {
		r.cfStarts = append(r.cfStarts, q.start)
	}
	if t.s3 != nil {
		r.s3Kinds, _ = t.s3.take()
		r.s3 = total(r.s3Kinds)
	}
	if t.cf.lease != nil {
		r.leaseExpired, r.leaseLongest = expiredWhileHeld(t.cf.lease.take())
	}
	r.readSummary()
	if p.logs != "" {
		_ = os.WriteFile(filepath.Join(p.logs, name+".log"), stderr.Bytes(), 0o644)
		_ = os.WriteFile(filepath.Join(p.logs, name+".requests.tsv"), timeline(start, ghLog, cfLog), 0o644)
	}
	return r
}

// timeline lists the requests of a run by start, in milliseconds from the
// run's start: start, end, API, endpoint, bytes sent and received; the
// critical path reads down it.
func timeline(start time.Time, gh, cf []scaleRequest) []byte {
	type row struct {
		api string
		scaleRequest
	}
	var rows []row
	for _, r := range gh {
		rows = append(rows, row{"github", r})
	}
	for _, r := range cf {
		rows = append(rows, row{"cloudflare", r})
	}
	slices.SortFunc(rows, func(a, b row) int { return a.start.Compare(b.start) })
	var b bytes.Buffer
	b.WriteString("start_ms\tend_ms\tapi\tendpoint\tsent_bytes\treceived_bytes\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%d\t%d\t%s\t%s\t%d\t%d\n", r.start.Sub(start).Milliseconds(), r.end.Sub(start).Milliseconds(), r.api, r.kind, max(r.sent, 0), r.got)
	}
	return b.Bytes()
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// readSummary fills r from the "run finished" line of its log.
func (r *scaleResult) readSummary() {
	for line := range strings.SplitSeq(r.stderr, "\n") {
		if !strings.Contains(line, `"run finished"`) {
			continue
		}
		var s struct {
			Mode, Status            string
			Added, Updated, Deleted int
			Skipped                 int
			Requests                map[string]int
			PhasesMs                map[string]float64
			BillableWrites          int
			BillableDeletes         int
		}
		if json.Unmarshal([]byte(line), &s) != nil {
			continue
		}
		r.mode, r.status = s.Mode, s.Status
		r.added, r.updated, r.deleted, r.skipped = s.Added, s.Updated, s.Deleted, s.Skipped
		r.phases = s.PhasesMs
		r.ops = s.BillableWrites + s.BillableDeletes
		if n, ok := s.Requests["github"]; ok {
			r.sumGitHub = n
		}
		if n, ok := s.Requests["cloudflare"]; ok {
			r.sumCloudflare = n
		}
	}
}

// check says what is wrong with a run that was to end in mode with the
// given counts, or "".
func (r scaleResult) check(mode string, added, updated, deleted int) string {
	switch {
	case r.killed != "":
		return "stopped by the bench: " + r.killed
	case r.code != 0:
		return fmt.Sprintf("exit %d: %s", r.code, lastLines(r.stderr, 5))
	case r.mode != mode:
		return fmt.Sprintf("mode %q, want %q", r.mode, mode)
	case r.added != added || r.updated != updated || r.deleted != deleted || r.skipped != 0:
		return fmt.Sprintf("added %d, updated %d, deleted %d, skipped %d; want %d, %d, %d, 0", r.added, r.updated, r.deleted, r.skipped, added, updated, deleted)
	}
	return ""
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
