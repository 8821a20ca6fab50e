package scalebench

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
)

var (
	scaleDeadline = flag.Duration("scale.deadline", 0, "scale bench: instead of the usual runs, run the program's first sync again and again with MAX_DURATION set to this until a run succeeds; report each run and how often any policy: key was written (0: off)")
	scaleGap      = flag.Duration("scale.gap", 0, "scale bench: with -scale.deadline, the pause between one run's end and the next's start (a new process does not know its predecessor's requests: 5m keeps the token inside Cloudflare's window)")
)

// cloudflareLimit is the requests Cloudflare lets one token make in any
// cloudflareWindow; past it, a 429 blocks the token for minutes.
const (
	cloudflareLimit  = 1200
	cloudflareWindow = 5 * time.Minute
)

// maxDeadlineRuns bounds a series that does not converge.
const maxDeadlineRuns = 30

// lambdaReserve is the Lambda handler's reserve (internal/lambda): a run
// whose deadline is the invocation's less it must have recorded itself
// before the reserve is spent, or Lambda kills it.
const lambdaReserve = 15 * time.Second

// deadlineRun is one run of a series across deadlines.
type deadlineRun struct {
	scaleResult
	waiting      int
	stoppedEarly bool
	failed       int
}

// deadlineSeries is a first sync across deadlines: the runs it took and
// how many times each policy: and queue: key was written over all of them.
type deadlineSeries struct {
	deadline             time.Duration
	runs                 []deadlineRun
	total                time.Duration
	converged            bool
	policyKeys           int // policy: keys in the namespace at the end
	maxPolicy, maxQueue  int // the most writes of any one key
	policyAgain, queueAg int // keys written more than once
	// busiestWindow is the most Cloudflare requests that started within any
	// cloudflareWindow of the series, across runs and gaps
	busiestWindow int
}

// acrossDeadlines runs the program's first sync on a fresh namespace with
// MAX_DURATION=deadline, again and again, until a run succeeds.
func (s *scaleSet) acrossDeadlines(b *testing.B, prog scaleProgram, sr *scaleRepo, ghp *scaleProxy, i int) deadlineSeries {
	d := *scaleDeadline
	cf := cloudflaretest.New(cloudflaretest.Config{AccountID: cfAccountID, NamespaceID: cfNamespaceID, Token: cfToken, Seed: cfSeed})
	defer cf.Close()
	t := scaleTarget{gh: ghp, cf: newScaleProxy(b, cf.BaseURL(), *scaleLatency, cloudflareKind, nil, nil)}
	p := prog
	p.extra = append(slices.Clone(prog.extra), "MAX_DURATION="+d.String())
	sr.at(sr.base)
	series := deadlineSeries{deadline: d}
	for k := range maxDeadlineRuns {
		name := fmt.Sprintf("%s-%d-deadline-%02d", strings.ReplaceAll(s.name(), "/", "-"), i+1, k+1)
		r := deadlineRun{scaleResult: p.sync(b, t, name)}
		r.readDeadlineSummary()
		series.runs = append(series.runs, r)
		series.total += r.wall
		b.Logf("%s: run %d: %s in %.1f s (deadline %s), %d added, %d waiting, %d failed", s.name(), k+1, r.status, r.wall.Seconds(), d, r.added, r.waiting, r.failed)
		if r.killed != "" || (r.code != 0 && r.code != 3) {
			b.Errorf("run %d: exit %d %s: %s", k+1, r.code, r.killed, lastLines(r.stderr, 5))
			break
		}
		if r.code == 0 && r.status == "success" {
			series.converged = true
			break
		}
		if k > 0 && r.added == 0 && series.runs[k-1].added == 0 {
			b.Errorf("%s: two runs in a row wrote nothing: the series stalls", s.name())
			break
		}
		if *scaleGap > 0 {
			b.Logf("%s: pausing %s before the next run", s.name(), *scaleGap)
			time.Sleep(*scaleGap)
		}
	}
	var starts []time.Time
	for _, r := range series.runs {
		starts = append(starts, r.cfStarts...)
	}
	series.busiestWindow = busiest(starts, cloudflareWindow)
	pol, q := cf.KeyWrites(registry.PolicyPrefix), cf.KeyWrites(registry.QueuePrefix)
	series.policyKeys = len(pol)
	series.maxPolicy, series.policyAgain = mostWrites(pol)
	series.maxQueue, series.queueAg = mostWrites(q)
	switch {
	case !series.converged:
		b.Errorf("%s: no run succeeded in %d runs of %s", s.name(), len(series.runs), d)
	case series.policyKeys != s.n:
		b.Errorf("%s: %d policies in the namespace, want %d", s.name(), series.policyKeys, s.n)
	case series.maxPolicy != 1:
		b.Errorf("%s: %d policy: keys written more than once (at most %d times): a later run wrote again what had landed", s.name(), series.policyAgain, series.maxPolicy)
	case series.busiestWindow > cloudflareLimit:
		b.Errorf("%s: %d Cloudflare requests within %s: Cloudflare would have answered 429 past %d", s.name(), series.busiestWindow, cloudflareWindow, cloudflareLimit)
	}
	return series
}

// busiest is the most of the times (in any order) that fall within any
// span of length w.
func busiest(times []time.Time, w time.Duration) int {
	ts := slices.Clone(times)
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	most, lo := 0, 0
	for hi, t := range ts {
		for t.Sub(ts[lo]) >= w {
			lo++
		}
		most = max(most, hi-lo+1)
	}
	return most
}

// mostWrites is the most writes of any one key, and how many keys were
// written more than once.
func mostWrites(writes map[string]int) (most, again int) {
	for _, n := range writes {
		most = max(most, n)
		if n > 1 {
			again++
		}
	}
	return most, again
}

// readDeadlineSummary reads what a run left waiting from its summary line.
func (r *deadlineRun) readDeadlineSummary() {
	for line := range strings.SplitSeq(r.stderr, "\n") {
		if !strings.Contains(line, `"run finished"`) {
			continue
		}
		var s struct {
			Waiting      int
			StoppedEarly bool
			Failed       int
		}
		if json.Unmarshal([]byte(line), &s) == nil {
			r.waiting, r.stoppedEarly, r.failed = s.Waiting, s.StoppedEarly, s.Failed
		}
	}
}

// printDeadlines prints each series: its runs against the deadline, and
// what the whole took.
func printDeadlines(w io.Writer, sets []*scaleSet, head scaleHead) {
	fmt.Fprintf(w, "\n## Scale bench across deadlines, %s\n\ncommit %s; %d cores; latency %s on every request", time.Now().Format("2006-01-02"), head.commit, runtime.NumCPU(), *scaleLatency)
	if *scaleEnv != "" {
		fmt.Fprintf(w, "; program settings %s", *scaleEnv)
	}
	if head.load != "" {
		fmt.Fprintf(w, "; %s", head.load)
	}
	fmt.Fprintln(w)
	for _, s := range sets {
		for i, series := range s.deadlines {
			fmt.Fprintf(w, "\n### First sync across deadlines: %s policies, MAX_DURATION=%s, BATCH_SIZE %d (repetition %d)\n\n", thousands(s.n), series.deadline, *scaleBatch, i+1)
			fmt.Fprint(w, "| run | mode | status | wall (s) | over the deadline (s) | in time | policies written | waiting | failed | Cloudflare requests | peak RSS (MiB) |\n|---:|---|---|---:|---:|---|---:|---:|---:|---:|---:|\n")
			for k, r := range series.runs {
				over := r.wall - series.deadline
				inTime := "yes"
				if over > lambdaReserve {
					inTime = "**no**"
				}
				rss := "—"
				if r.rssKiB > 0 {
					rss = fmt.Sprintf("%.0f", float64(r.rssKiB)/1024)
				}
				fmt.Fprintf(w, "| %d | %s | %s | %.2f | %+.2f | %s | %s | %s | %d | %d | %s |\n", k+1, r.mode, r.status, r.wall.Seconds(), over.Seconds(), inTime,
					thousands(r.added), thousands(r.waiting), r.failed, r.cloudflare, rss)
			}
			fmt.Fprintf(w, "\nruns needed: %d (converged: %v); total %.1f s of runs, %s paused between them; policy: keys %s, each written at most %d time(s) (%d more than once); queue: keys at most %d time(s) (%d more than once); at most %s Cloudflare requests in any %s (its limit %s). \"In time\": the run recorded itself within the Lambda handler's %s reserve after its deadline.\n",
				len(series.runs), series.converged, series.total.Seconds(), *scaleGap, thousands(series.policyKeys), series.maxPolicy, series.policyAgain, series.maxQueue, series.queueAg,
				thousands(series.busiestWindow), cloudflareWindow, thousands(cloudflareLimit), lambdaReserve)
		}
	}
}

func TestBusiest_MostRequestsInAnyWindow(t *testing.T) {
	t.Parallel()
	at := func(s ...int) []time.Time {
		t0 := time.Unix(1_700_000_000, 0)
		var ts []time.Time
		for _, v := range s {
			ts = append(ts, t0.Add(time.Duration(v)*time.Second))
		}
		return ts
	}
	for _, c := range []struct {
		secs []int
		want int
	}{
		{nil, 0},
		{[]int{5}, 1},
		{[]int{0, 299, 300, 301}, 3},           // 300 s after the first is outside its window
		{[]int{900, 0, 1, 2, 600, 601}, 3},     // unsorted; two runs 5 minutes apart
		{[]int{0, 100, 200, 250, 260, 599}, 5}, // the busiest window does not start at a run's start
	} {
		if got := busiest(at(c.secs...), 5*time.Minute); got != c.want {
			t.Errorf("busiest(%v) = %d, want %d", c.secs, got, c.want)
		}
	}
}
