package scalebench

import (
	"fmt"
	"io"
	"maps"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"
)

// printScale prints the bench's tables in markdown: the medians per run,
// the targets, and where each run's time and requests went.
// scaleHead is what the table's heading says of the measurement: the commit
// measured (taken when the bench starts) and the machine's load.
type scaleHead struct{ commit, load string }

func printScale(w io.Writer, sets []*scaleSet, head scaleHead) {
	reps := 0
	for _, s := range sets {
		reps = max(reps, len(s.reps))
	}
	fmt.Fprintf(w, "\n## Scale bench, %s\n\n", time.Now().Format("2006-01-02"))
	fmt.Fprintf(w, "commit %s; %d cores (%s/%s), %s; latency %s on every request; BATCH_SIZE %d; median of %d repetition(s)", head.commit, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), *scaleLatency, *scaleBatch, reps)
	if *scaleEnv != "" {
		fmt.Fprintf(w, "; program settings %s", *scaleEnv)
	}
	if head.load != "" {
		fmt.Fprintf(w, "; %s", head.load)
	}
	fmt.Fprint(w, "\n\n| policies | files | run | wall (s) | GitHub requests | Cloudflare requests | peak RSS (MiB) | CPU (s) |\n|---:|---|---|---:|---:|---:|---:|---:|\n")
	for _, s := range sets {
		for _, run := range []string{runFirst, runMinimal, runFull, runIncr, runUnchanged} {
			m, ok := s.median(run)
			if !ok {
				if why := s.killedRun(run); why != "" {
					fmt.Fprintf(w, "| %s | %s | %s | — | — | — | stopped: %s | — |\n", thousands(s.n), s.files(), run, why)
				}
				continue
			}
			rss, cpu := "—", "—"
			if m.rssKiB > 0 {
				rss = fmt.Sprintf("%.0f", float64(m.rssKiB)/1024)
				cpu = fmt.Sprintf("%.2f", m.cpu.Seconds())
			}
			fmt.Fprintf(w, "| %s | %s | %s | %.2f | %d | %d | %s | %s |\n", thousands(s.n), s.files(), run, m.wall.Seconds(), m.github, m.cloudflare, rss, cpu)
		}
	}
	fmt.Fprint(w, "\nTargets (the issue states them for 10,000 policies at 50 ms):\n\n| policies | files | target | measured | met |\n|---:|---|---|---|---|\n")
	for _, s := range sets {
		for _, t := range s.targets() {
			met := "yes"
			if !t.met {
				met = "**no**"
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", thousands(s.n), s.files(), t.what, t.got, met)
		}
	}
	fmt.Fprint(w, "\nWhere it goes (phases from the summary line, ms; requests by endpoint at the proxies; connections opened):\n\n| policies | files | run | phases (ms) | GitHub | Cloudflare | connections GitHub/Cloudflare |\n|---:|---|---|---|---|---|---|\n")
	for _, s := range sets {
		for _, run := range []string{runFirst, runMinimal, runFull, runIncr, runUnchanged} {
			m, ok := s.median(run)
			if !ok {
				continue
			}
			note := ""
			if m.sumGitHub >= 0 && (m.sumGitHub != m.github || m.sumCloudflare != m.cloudflare) {
				note = fmt.Sprintf(" (the summary line says %d and %d)", m.sumGitHub, m.sumCloudflare)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s%s | %d/%d |\n", thousands(s.n), s.files(), run, phases(m.phases), kinds(m.ghKinds), kinds(m.cfKinds), note, m.ghConns, m.cfConns)
		}
	}
	printMirror(w, sets)
	for _, s := range sets {
		for _, p := range s.problems {
			fmt.Fprintf(w, "\nproblem: %s\n", p)
		}
	}
}

func (s *scaleSet) files() string {
	switch {
	case s.fileSize > 0:
		return "1 MiB"
	case *scaleMiB > 0:
		return fmt.Sprintf("2–12 KiB, %d of 1 MiB", min(*scaleMiB, s.n))
	}
	return "2–12 KiB"
}

// scaleCheck is one target, measured.
type scaleCheck struct {
	what, got string
	met       bool
}

// targets checks the targets against the medians.
func (s *scaleSet) targets() []scaleCheck {
	var out []scaleCheck
	ceil := func(a, b int) int { return (a + b - 1) / b }
	batch := *scaleBatch
	// Announcements and entries go in batches apart, each phase's last
	// batch part full: at 50 a batch (N a multiple of 25) that costs
	// nothing, at 10,000 up to a request a phase.
	slack := 6
	if batch > 50 {
		slack += 2
	}
	cfBound := func(ops int) int { return ceil(s.n, 1000) + ceil(ops, batch) + slack }
	first, okFirst := s.median(runFirst)
	minimal, okMin := s.median(runMinimal)
	incr, okIncr := s.median(runIncr)
	same, okSame := s.median(runUnchanged)
	rssTarget := fmt.Sprintf("first sync: peak RSS ≤ %d MiB (the worst repetition)", rssLimitMiB(s.n))
	if why := s.killedRun(runFirst); why != "" {
		out = append(out, scaleCheck{rssTarget, "stopped: " + why, false})
	}
	if okFirst {
		if s.fileSize == 0 && okMin {
			ratio := first.wall.Seconds() / minimal.wall.Seconds()
			out = append(out, scaleCheck{"first sync ≤ 1.3× the minimal client", fmt.Sprintf("%.2f s vs %.2f s: %.2f×", first.wall.Seconds(), minimal.wall.Seconds(), ratio), ratio <= 1.3})
		}
		if s.fileSize == 0 {
			out = append(out,
				// a first sync in windows lists the tree and reads the archive (its link, its download) once a window
				scaleCheck{fmt.Sprintf("first sync: ≤ 4 GitHub requests besides the tree's %s%s", listings(first), perWindow(first.windows, 2)), fmt.Sprint(first.github), first.ghBesidesTree <= 4+2*(first.windows-1)},
				scaleCheck{fmt.Sprintf("first sync: the tree's listings ≤ 1, or walked ≤ 3 + its %d parts%s", len(scaleParts), perWindow(first.windows, 0)), fmt.Sprint(first.ghTrees), first.ghTrees <= first.windows*(3+len(scaleParts))},
				scaleCheck{fmt.Sprintf("first sync: Cloudflare ≤ ⌈N/1000⌉ + ⌈2N/%d⌉ + %d = %d", batch, slack, cfBound(2*s.n)), fmt.Sprint(first.cloudflare), first.cloudflare <= cfBound(2*s.n)})
		}
		worst := s.worstRSSKiB(runFirst)
		out = append(out, scaleCheck{rssTarget, fmt.Sprintf("%.1f MiB (median %.1f)", float64(worst)/1024, float64(first.rssKiB)/1024), worst <= int64(rssLimitMiB(s.n))<<10})
		if s.n == 50000 && batch >= 10000 && s.fileSize == 0 { // the target is 50,000's
			out = append(out, scaleCheck{"first sync ≤ 30 s (BATCH_SIZE 10000)", fmt.Sprintf("%.2f s", first.wall.Seconds()), first.wall <= 30*time.Second})
		}
	}
	if okIncr && s.fileSize == 0 {
		out = append(out,
			scaleCheck{"incremental ≤ 1.5 s", fmt.Sprintf("%.2f s", incr.wall.Seconds()), incr.wall <= 1500*time.Millisecond},
			scaleCheck{fmt.Sprintf("incremental: ≤ 8 GitHub requests besides the tree's %s", listings(incr)), fmt.Sprint(incr.github), incr.ghBesidesTree <= 8},
			scaleCheck{fmt.Sprintf("incremental: the tree's listings ≤ 1, or walked ≤ 3 + its %d parts", len(scaleParts)), fmt.Sprint(incr.ghTrees), incr.ghTrees <= 3+len(scaleParts)})
	}
	if okSame && s.fileSize == 0 {
		out = append(out,
			scaleCheck{"unchanged head ≤ 0.5 s", fmt.Sprintf("%.2f s", same.wall.Seconds()), same.wall <= 500*time.Millisecond},
			scaleCheck{"unchanged head: 1 GitHub request", fmt.Sprint(same.github), same.github <= 1},
			scaleCheck{"unchanged head: ≤ 3 Cloudflare requests", fmt.Sprint(same.cloudflare), same.cloudflare <= 3})
	}
	for _, r := range []struct {
		name string
		ok   bool
		m    scaleResult
	}{{runFirst, okFirst, first}, {runIncr, okIncr, incr}, {runUnchanged, okSame, same}} {
		if r.ok && s.fileSize == 0 {
			b := cfBound(r.m.ops)
			out = append(out, scaleCheck{fmt.Sprintf("%s: Cloudflare ≤ ⌈N/1000⌉ + ⌈operations/%d⌉ + %d = %d (%d operations)", r.name, batch, slack, b, r.m.ops), fmt.Sprint(r.m.cloudflare), r.m.cloudflare <= b})
		}
	}
	if full, okFull := s.median(runFull); okFirst && okFull && first.rssKiB > 0 {
		above := float64(full.rssKiB-first.rssKiB) / 1024
		out = append(out, scaleCheck{"full run: peak RSS ≤ the first sync's + 10 MiB", fmt.Sprintf("%.1f MiB (%+.1f MiB)", float64(full.rssKiB)/1024, above), above <= 10})
	}
	if okFirst {
		total, longest := s.leaseExpired(runFirst)
		got := "held throughout"
		if total > 0 {
			got = fmt.Sprintf("expired for %s, %s at most at a time", total.Round(time.Second), longest.Round(time.Second))
		}
		out = append(out, scaleCheck{"first sync: the lease never expired while the run wrote (worst repetition)", got, total == 0})
	}
	return out
}

// leaseExpired is the worst repetition's time with the lease expired.
func (s *scaleSet) leaseExpired(run string) (total, longest time.Duration) {
	for _, rep := range s.reps {
		if r, ok := rep[run]; ok && r.leaseExpired > total {
			total, longest = r.leaseExpired, r.leaseLongest
		}
	}
	return total, longest
}

// phases lists the summary line's phases in the order a run goes through them.
func phases(p map[string]float64) string {
	if len(p) == 0 {
		return "—"
	}
	var parts []string
	for _, k := range []string{"read", "plan", "fetch", "apply", "record"} {
		if v, ok := p[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, v))
		}
	}
	return strings.Join(parts, ", ")
}

func kinds(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// commitOf names the commit the bench measures, "+dirty" with changes.
func commitOf() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		c += "+dirty"
	}
	return c
}

// listings says how many listings a run's tree took: one, or more when
// GitHub cut the recursive listing (100,000 entries or 7 MB,
// githubtest.MaxTreeEntries and MaxTreeBytes: some 25,000 of the bench's
// policies) and the run walked the tree folder by folder. Those are
// GitHub's limits, not the run's choice, so the checks of a run's GitHub
// requests count them apart, and a check of their own bounds them: a walk
// of the bench's tree (one top folder of len(scaleParts) parts) takes the
// root's listing and level, the top folder's level and one listing a part.
// perWindow says how a bound grows with a first sync's windows: the
// whole bound a window, or more requests a window beyond the first.
func perWindow(windows, more int) string {
	switch {
	case windows <= 1:
		return ""
	case more == 0:
		return fmt.Sprintf(", each of %d windows", windows)
	default:
		return fmt.Sprintf(", + %d for each of %d windows beyond the first", more, windows-1)
	}
}

func listings(r scaleResult) string {
	switch n := r.ghTrees; n {
	case 0:
		return "listings (none)"
	case 1:
		return "listing"
	default:
		return fmt.Sprintf("%d listings (walked: GitHub cuts one at 7 MB)", n)
	}
}
