package scalebench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
)

// The scale bench's settings (docs/bench.md). They are read only by
// BenchmarkScale, which runs only with -bench.
var (
	scalePolicies = flag.String("scale.policies", "1000,10000", "scale bench: policy counts, comma-separated (50000 takes about 25 minutes: Cloudflare's rate window)")
	scaleLatency  = flag.Duration("scale.latency", 50*time.Millisecond, "scale bench: latency added to every request of both APIs")
	scaleLarge    = flag.String("scale.large", "", "scale bench: policy counts at which to run again with 1 MiB files (e.g. 10000)")
	scaleMiB      = flag.Int("scale.mib", 0, "scale bench: how many of each -scale.policies repository's files are 1 MiB, spread evenly (the rest 2–12 KiB)")
	scaleBatch    = flag.Int("scale.batch", 50, "scale bench: BATCH_SIZE of the program and pairs per bulk request of the minimal client (1-10000)")
	scaleMinimal  = flag.Bool("scale.minimal", true, "scale bench: time the minimal client's first sync beside the program's")
	scaleEnv      = flag.String("scale.env", "", "scale bench: settings for the program, comma-separated KEY=VALUE (e.g. CONCURRENCY=16,GODEBUG=gctrace=1)")
	scaleMemCap   = flag.Int64("scale.memcap", 4096, "scale bench: MiB; a run whose RSS passes it is stopped (0: no cap)")
	scaleLogs     = flag.String("scale.logs", "", "scale bench: folder to keep each run's log in")
	scaleProfile  = flag.String("scale.profile", "", "scale bench: folder for CPU and heap profiles of a first and an incremental sync run in-process (see docs/bench.md)")
	scaleFull     = flag.Bool("scale.full", false, "scale bench: after the first sync, run 'sync --full' over the registry it wrote (head unchanged): a full run's memory")
)

// The runs of one repetition.
const (
	runFirst     = "first sync"
	runMinimal   = "first sync, minimal client"
	runIncr      = "incremental (5 edits, 1 add, 1 delete)"
	runUnchanged = "unchanged head"
	runFull      = "full run (head unchanged, --full)"
)

// BenchmarkScale runs the syncjob binary, as a child process, against the
// fake GitHub and the fake Cloudflare behind proxies that add latency to
// every request, at each -scale.policies count: a first sync, an
// incremental sync, a sync of an unchanged head, and the minimal client's
// first sync. Each iteration is one repetition; the table it prints holds
// the medians, and checks the targets of docs/bench.md.
//
//	go test -run '^$' -bench Scale -benchtime 3x -timeout 60m ./internal/scalebench -args -scale.policies=1000,10000
func BenchmarkScale(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git not found")
	}
	gotool, err := exec.LookPath("go")
	if err != nil {
		b.Skip("go not found: the scale bench builds the syncjob binary")
	}
	prog := scaleProgram{bin: buildSyncjob(b, gotool), rusage: buildRusage(b, gotool), memCap: *scaleMemCap << 10, logs: *scaleLogs}
	prog.extra = []string{"BATCH_SIZE=" + strconv.Itoa(*scaleBatch)} // -scale.env may set it again: the later wins
	if *scaleEnv != "" {
		prog.extra = append(prog.extra, strings.Split(*scaleEnv, ",")...)
	}
	if prog.logs != "" {
		if err := os.MkdirAll(prog.logs, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	var sets []*scaleSet
	add := func(counts string, fileSize int) {
		for _, s := range strings.Split(counts, ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			n, err := strconv.Atoi(s)
			if err != nil || n < 20 {
				b.Fatalf("scale bench: policy count %q: want a number of at least 20", s)
			}
			sets = append(sets, &scaleSet{n: n, fileSize: fileSize})
		}
	}
	add(*scalePolicies, 0)
	add(*scaleLarge, 1<<20)
	head := scaleHead{commit: commitOf(), load: loadAverage()}
	for _, set := range sets {
		b.Run(set.name(), func(b *testing.B) { set.bench(b, prog) })
	}
	if head.load != "" {
		head.load = "load average " + head.load + " at the start, " + loadAverage() + " at the end"
	}
	if *scaleDeadline > 0 {
		printDeadlines(os.Stdout, sets, head)
		return
	}
	printScale(os.Stdout, sets, head)
}

// loadAverage is the machine's one-minute load average, "" when unknown:
// other work on the machine shows in the wall times.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// buildSyncjob builds the program once for the whole bench.
func buildSyncjob(b *testing.B, gotool string) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "syncjob")
	cmd := exec.Command(gotool, "build", "-o", bin, "../../cmd/syncjob")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// scaleSet is one repository size and its repetitions.
type scaleSet struct {
	n, fileSize int
	reps        []scaleRep
	problems    []string
	deadlines   []deadlineSeries // -scale.deadline
}

// scaleRep is one repetition: each run's result, by run name.
type scaleRep map[string]scaleResult

func (s *scaleSet) name() string {
	switch {
	case s.fileSize > 0:
		return fmt.Sprintf("policies=%d/files=1MiB", s.n)
	case *scaleMiB > 0:
		return fmt.Sprintf("policies=%d/mib=%d", s.n, *scaleMiB)
	}
	return fmt.Sprintf("policies=%d", s.n)
}

func (s *scaleSet) bench(b *testing.B, prog scaleProgram) {
	genStart := time.Now()
	sr := newScaleRepo(b, s.n, s.fileSize)
	b.Logf("%s: repository generated in %s", s.name(), time.Since(genStart).Round(time.Millisecond))
	gh := githubtest.NewServer(b, "knue", "policies", sr.repo)
	ghp := newGitHubProxy(b, sr, gh.URL(), *scaleLatency)
	for b.Loop() {
		if *scaleDeadline > 0 { // the runs across deadlines instead (deadline_test.go)
			s.deadlines = append(s.deadlines, s.acrossDeadlines(b, prog, sr, ghp, len(s.deadlines)))
			continue
		}
		rep := s.once(b, prog, sr, ghp, len(s.reps))
		s.reps = append(s.reps, rep)
	}
	if *scaleProfile != "" {
		s.profile(b, sr, ghp)
	}
	for _, run := range []struct{ name, unit string }{{runFirst, "first"}, {runFull, "full"}, {runIncr, "incr"}, {runUnchanged, "same"}, {runMinimal, "minimal"},
		{runMirrorFirst, "mirror-first"}, {runMirrorIncr, "mirror-incr"}, {runMirrorMinimal, "mirror-minimal"}} {
		m, ok := s.median(run.name)
		if !ok {
			continue
		}
		b.ReportMetric(m.wall.Seconds(), run.unit+"-s")
		b.ReportMetric(float64(m.github), run.unit+"-gh-req")
		b.ReportMetric(float64(m.cloudflare), run.unit+"-cf-req")
		if m.s3Kinds != nil {
			b.ReportMetric(float64(m.s3), run.unit+"-s3-req")
		}
		if m.rssKiB > 0 {
			b.ReportMetric(float64(m.rssKiB)/1024, run.unit+"-rss-MiB")
		}
	}
}

// once is one repetition: the program's three runs on a fresh namespace,
// then the minimal client's first sync on another.
func (s *scaleSet) once(b *testing.B, prog scaleProgram, sr *scaleRepo, ghp *scaleProxy, i int) scaleRep {
	rep := scaleRep{}
	cf := cloudflaretest.New(cloudflaretest.Config{AccountID: cfAccountID, NamespaceID: cfNamespaceID, Token: cfToken, Seed: cfSeed})
	defer cf.Close()
	t := scaleTarget{gh: ghp, cf: newScaleProxy(b, cf.BaseURL(), *scaleLatency, cloudflareKind, nil, nil)}
	t.cf.lease = &leaseWatch{}
	name := func(run string) string {
		return fmt.Sprintf("%s-%d-%s", strings.ReplaceAll(s.name(), "/", "-"), i+1, strings.Fields(run)[0])
	}
	type scaleRun struct {
		name, mode              string
		added, updated, deleted int
		head                    string
		args                    []string
	}
	runs := []scaleRun{{name: runFirst, mode: "full", added: s.n, head: sr.base}}
	if *scaleFull {
		runs = append(runs, scaleRun{name: runFull, mode: "full", head: sr.base, args: []string{"--full"}})
	}
	runs = append(runs,
		scaleRun{name: runIncr, mode: "incremental", added: 1, updated: 5, deleted: 1, head: sr.next},
		scaleRun{name: runUnchanged, mode: "unchanged", head: sr.next})
	for _, run := range runs {
		sr.at(run.head)
		r := prog.sync(b, t, name(run.name), run.args...)
		rep[run.name] = r
		if r.leaseExpired > 0 {
			s.problems = append(s.problems, fmt.Sprintf("%s, repetition %d, %s: the lease had expired for %s (at most %s at a time) while the run went on writing",
				s.name(), i+1, run.name, r.leaseExpired.Round(time.Second), r.leaseLongest.Round(time.Second)))
		}
		if p := r.check(run.mode, run.added, run.updated, run.deleted); p != "" {
			s.problems = append(s.problems, fmt.Sprintf("%s, repetition %d, %s: %s", s.name(), i+1, run.name, p))
			b.Errorf("%s: %s", run.name, p)
			break // the next runs would start from a registry the bench did not intend
		}
	}
	if *scaleMinimal {
		rep[runMinimal] = s.minimal(b, sr, ghp)
	}
	if *scaleMirror {
		s.mirrorRuns(b, prog, sr, ghp, i, rep)
	}
	return rep
}

// minimal times the minimal client's first sync on a fresh namespace.
func (s *scaleSet) minimal(b *testing.B, sr *scaleRepo, ghp *scaleProxy) scaleResult {
	cf := cloudflaretest.New(cloudflaretest.Config{AccountID: cfAccountID, NamespaceID: cfNamespaceID, Token: cfToken, Seed: cfSeed})
	defer cf.Close()
	t := scaleTarget{gh: ghp, cf: newScaleProxy(b, cf.BaseURL(), *scaleLatency, cloudflareKind, nil, nil)}
	sr.at(sr.base)
	ghp.take()
	start := time.Now()
	wrote, err := newMinimalClient(t).firstSync(context.Background())
	r := scaleResult{wall: time.Since(start), rssKiB: -1, sumGitHub: -1, sumCloudflare: -1}
	r.ghKinds, r.ghConns = t.gh.take()
	r.cfKinds, r.cfConns = t.cf.take()
	r.github, r.cloudflare = total(r.ghKinds), total(r.cfKinds)
	r.ops = cf.BulkPairsWritten() + 1
	switch {
	case err != nil:
		b.Errorf("minimal client: %v", err)
		r.killed = err.Error()
	case wrote != s.n:
		b.Errorf("minimal client wrote %d policies, want %d", wrote, s.n)
	}
	return r
}

// median is the median of each measure of a run over the repetitions
// (taken measure by measure); ok is false when no repetition has the run.
func (s *scaleSet) median(run string) (m scaleResult, ok bool) {
	var rs []scaleResult
	for _, rep := range s.reps {
		if r, found := rep[run]; found && r.killed == "" {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return scaleResult{}, false
	}
	mid := func(f func(scaleResult) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	m = rs[0]
	m.wall = time.Duration(mid(func(r scaleResult) float64 { return float64(r.wall) }))
	m.cpu = time.Duration(mid(func(r scaleResult) float64 { return float64(r.cpu) }))
	m.rssKiB = int64(mid(func(r scaleResult) float64 { return float64(r.rssKiB) }))
	m.github = int(mid(func(r scaleResult) float64 { return float64(r.github) }))
	m.ghBesidesTree = int(mid(func(r scaleResult) float64 { return float64(r.github - r.ghKinds["tree"]) }))
	m.ghTrees = int(mid(func(r scaleResult) float64 { return float64(r.ghKinds["tree"]) }))
	m.windows = max(1, int(mid(func(r scaleResult) float64 { return float64(r.ghKinds["archive-link"]) })))
	m.cloudflare = int(mid(func(r scaleResult) float64 { return float64(r.cloudflare) }))
	m.s3 = int(mid(func(r scaleResult) float64 { return float64(r.s3) }))
	m.ops = int(mid(func(r scaleResult) float64 { return float64(r.ops) }))
	m.phases = map[string]float64{}
	for k := range rs[0].phases {
		m.phases[k] = mid(func(r scaleResult) float64 { return r.phases[k] })
	}
	return m, true
}

// worstRSSKiB is the largest peak RSS of a run over the repetitions that
// finished: a memory target is a limit, which the worst run must keep.
func (s *scaleSet) worstRSSKiB(run string) int64 {
	var worst int64
	for _, rep := range s.reps {
		if r, found := rep[run]; found && r.killed == "" {
			worst = max(worst, r.rssKiB)
		}
	}
	return worst
}

// rssLimitMiB is the peak RSS target for a first sync of n
// policies: 64 MiB up to 50,000, 96 MiB at 200,000 and past it, and the
// line between the two in between.
func rssLimitMiB(n int) int {
	switch {
	case n <= 50_000:
		return 64
	case n >= 200_000:
		return 96
	}
	return 64 + (n-50_000)*32/150_000
}

// killedRun returns why a run was stopped in some repetition, or "".
func (s *scaleSet) killedRun(run string) string {
	for _, rep := range s.reps {
		if r, ok := rep[run]; ok && r.killed != "" {
			return r.killed
		}
	}
	return ""
}
