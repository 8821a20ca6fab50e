package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The operator's captures (issue #20): run with
//
//	go test ./cmd/syncjob -run TestCaptures -captures /tmp/captures.md [-captures-repo DIR]
//
// DIR is a checkout of the policy repository (its .md files are loaded
// into the fake GitHub); without it a generated one stands in. Skipped
// unless -captures is set.
var (
	captures     = flag.String("captures", "", "write the operator's captures (status, runs show, progress) to this file")
	capturesRepo = flag.String("captures-repo", "", "with -captures: a checkout of the policy repository to load")
)

// capturesLarge is the registry size of the large captures.
const capturesLarge = 5000

func TestCaptures_StatusRunsShowAndProgress(t *testing.T) {
	if *captures == "" {
		t.Skip("run with -captures FILE")
	}
	var out bytes.Buffer
	small := newCloudflareWorld(t)
	n := loadPolicies(t, small, *capturesRepo)
	small.repo.Commit("the policy repository")
	fmt.Fprintf(&out, "## %d policies (%s)\n\n", n, sourceOf(*capturesRepo))
	small.sync(0)
	captureStatus(t, small, &out)
	captureRunsShow(t, small, &out)

	large := newCloudflareWorld(t)
	loadPolicies(t, large, *capturesRepo)
	generatePolicies(large, capturesLarge-n)
	large.repo.Commit("the policy repository and generated policies")
	fmt.Fprintf(&out, "## %d policies (%d of them generated)\n\n", capturesLarge, capturesLarge-n)
	captureProgress(t, large, &out)
	captureStatus(t, large, &out)
	if err := os.WriteFile(*captures, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func sourceOf(dir string) string {
	if dir == "" {
		return "a generated repository"
	}
	return "the policy repository's head tree"
}

// loadPolicies writes the markdown files of dir (a checkout; .git left
// out) into the world's repository, or a generated stand-in of 93 when
// dir is empty, and returns how many it wrote.
func loadPolicies(t *testing.T, w *world, dir string) int {
	t.Helper()
	if dir == "" {
		generatePolicies(w, 93)
		return 93
	}
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == ".git":
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(strings.ToLower(p), ".md"):
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		w.repo.Write(filepath.ToSlash(rel), string(b))
		if !strings.EqualFold(d.Name(), "README.md") {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// generatePolicies adds n generated policies under 생성/.
func generatePolicies(w *world, n int) {
	for i := range n {
		w.repo.Write(fmt.Sprintf("생성/제%d편/생성 규정 %05d.md", i%12+1, i), fmt.Sprintf("# 생성 규정 %05d\n\n제1조(목적) 이 규정은 시험용이다.\n", i))
	}
}

// captureStatus runs status and status --check and counts what each cost.
func captureStatus(t *testing.T, w *world, out io.Writer) {
	t.Helper()
	for _, args := range [][]string{{"status"}, {"status", "--check"}} {
		r, requests := w.countedRun(args...)
		fmt.Fprintf(out, "```\n$ syncjob %s    # exit %d, %d Cloudflare requests\n%s%s```\n\n", strings.Join(args, " "), r.code, requests, r.stdout, r.stderr)
	}
}

// captureRunsShow edits, moves and deletes a policy, syncs, and shows the run.
func captureRunsShow(t *testing.T, w *world, out io.Writer) {
	t.Helper()
	files := w.repo.Files(w.repo.Head("main"))
	var paths []string
	for p := range files {
		if strings.HasSuffix(p, ".md") && !strings.EqualFold(filepath.Base(p), "README.md") {
			paths = append(paths, p)
		}
	}
	if len(paths) < 3 {
		t.Fatalf("%d policies: too few to edit, move and delete", len(paths))
	}
	slices.Sort(paths)
	edited, moved, deleted := paths[0], paths[1], paths[2]
	w.repo.Write(edited, files[edited]+"\n부칙 이 규정은 공포한 날부터 시행한다.\n")
	w.repo.Move(moved, "폐지 예정/"+filepath.Base(moved))
	w.repo.Remove(deleted)
	w.repo.Commit("edit, move and delete one policy each")
	w.sync(0)
	id := w.state().lastRun.RunID
	r := w.run("runs", "show", id)
	fmt.Fprintf(out, "```\n$ syncjob runs show %s    # exit %d\n%s%s```\n\n", id, r.code, r.stdout, r.stderr)
}

// captureProgress runs a first sync on a pretend terminal whose clock runs
// (real time plus every wait the fakes made it sleep), with BATCH_SIZE=10
// so that its bulk writes pass Cloudflare's window, as a first sync of
// 50,000 policies at the default 50 does. Each drawing of the status line
// is one line of the capture.
func captureProgress(t *testing.T, w *world, out io.Writer) {
	t.Helper()
	w.env["LOG_FORMAT"], w.env["BATCH_SIZE"] = "auto", "10"
	began := time.Now()
	now := func() time.Time { return w.clock().Add(time.Since(began)) }
	var stdout, stderr bytes.Buffer
	d := deps{
		now:        now,
		isTerminal: func(x io.Writer) bool { return x == &stderr },
		httpClient: &githubHTTP{sleep: func(ctx context.Context, d time.Duration) error {
			w.mu.Lock()
			w.now = w.now.Add(d)
			w.mu.Unlock()
			return ctx.Err()
		}},
	}
	code := runWith(context.Background(), []string{"sync"}, func(k string) string { return w.env[k] }, &stdout, &stderr, d)
	w.env["LOG_FORMAT"], w.env["BATCH_SIZE"] = "json", "50"
	fmt.Fprintf(out, "```\n$ BATCH_SIZE=10 syncjob sync    # exit %d, on a terminal: each line one drawing of the status line (⟳) or a log line\n", code)
	for _, f := range strings.Split(stderr.String(), "\r\x1b[K") {
		for _, line := range strings.SplitAfter(f, "\n") {
			switch {
			case line == "":
			case strings.HasSuffix(line, "\n"):
				fmt.Fprint(out, line)
			default:
				fmt.Fprintf(out, "⟳ %s\n", line)
			}
		}
	}
	fmt.Fprintf(out, "%s```\n\n", lastLines(stdout.String(), 3))
}

// lastLines is the first line of s and, after an ellipsis, its last n.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) <= n+1 {
		return s
	}
	return lines[0] + "\n…\n" + strings.Join(lines[len(lines)-n:], "\n") + "\n"
}
