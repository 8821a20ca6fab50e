package scalebench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"golang.org/x/sync/errgroup"

	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
)

// scaleMirror adds the content-mirror runs (docs/bench.md, "Content mirror").
var scaleMirror = flag.Bool("scale.mirror", false, "scale bench: also sync with the content mirror on an in-process S3 server (gofakes3) behind the latency proxy, beside a minimal client making the same uploads")

// The content mirror's runs of one repetition.
const (
	runMirrorFirst   = "first sync, mirror"
	runMirrorMinimal = "first sync, mirror, minimal client"
	runMirrorIncr    = "incremental, mirror (5 edits, 1 add, 1 delete)"
)

// The fake bucket and its keys; gofakes3 checks no signature.
const (
	s3Bucket    = "policies-bench"
	s3AccessKey = "AKIASCALEBENCH000001"
	s3Secret    = "scalebench-secret-0123456789abcdef"
)

// mirrorEnv are the settings that turn the program's mirror on, pointed
// at the S3 proxy.
func mirrorEnv(s3URL string) []string {
	return []string{
		"CONTENT_BUCKET=" + s3Bucket,
		"CONTENT_ENDPOINT=" + s3URL,
		"CONTENT_ACCESS_KEY_ID=" + s3AccessKey,
		"CONTENT_SECRET_ACCESS_KEY=" + s3Secret,
	}
}

// newS3Proxy starts a gofakes3 server over plain HTTP with the bench's
// bucket (kept as digests: s3Sums), behind a latency proxy that counts its
// requests.
func newS3Proxy(tb testing.TB, delay time.Duration) *scaleProxy {
	tb.Helper()
	backend := newS3Sums(s3Bucket)
	srv := httptest.NewServer(gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
	tb.Cleanup(srv.Close)
	return newScaleProxy(tb, srv.URL, delay, s3Kind, nil, nil)
}

// s3Kind names an S3 request by operation.
func s3Kind(r *http.Request) string {
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)
	hasKey := len(parts) == 2 && parts[1] != ""
	_, del := r.URL.Query()["delete"]
	switch {
	case r.Method == http.MethodPost && del:
		return "delete"
	case r.Method == http.MethodPut && hasKey:
		return "put"
	case r.Method == http.MethodGet && !hasKey:
		return "list"
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		return "get"
	}
	return "other"
}

// mirrorRuns are the content mirror's runs of one repetition: the
// program's first sync and an incremental sync on a fresh namespace and
// bucket, then the minimal client's first sync with the same uploads on
// another.
func (s *scaleSet) mirrorRuns(b *testing.B, prog scaleProgram, sr *scaleRepo, ghp *scaleProxy, i int, rep scaleRep) {
	cf := cloudflaretest.New(cloudflaretest.Config{AccountID: cfAccountID, NamespaceID: cfNamespaceID, Token: cfToken, Seed: cfSeed})
	defer cf.Close()
	t := scaleTarget{gh: ghp, cf: newScaleProxy(b, cf.BaseURL(), *scaleLatency, cloudflareKind, nil, nil), s3: newS3Proxy(b, *scaleLatency)}
	for _, run := range []struct {
		name, mode                    string
		added, updated, deleted, puts int
		head                          string
	}{
		{runMirrorFirst, "full", s.n, 0, 0, s.n, sr.base},
		{runMirrorIncr, "incremental", 1, 5, 1, 6, sr.next},
	} {
		sr.at(run.head)
		r := prog.sync(b, t, fmt.Sprintf("%s-%d-mirror-%s", strings.ReplaceAll(s.name(), "/", "-"), i+1, strings.Fields(run.name)[0]))
		rep[run.name] = r
		p := r.check(run.mode, run.added, run.updated, run.deleted)
		if p == "" && r.s3Kinds["put"] != run.puts {
			p = fmt.Sprintf("%d S3 uploads, want %d (one per added or changed policy)", r.s3Kinds["put"], run.puts)
		}
		if p != "" {
			s.problems = append(s.problems, fmt.Sprintf("%s, repetition %d, %s: %s", s.name(), i+1, run.name, p))
			b.Errorf("%s: %s", run.name, p)
			break
		}
	}
	rep[runMirrorMinimal] = s.minimalMirror(b, sr, ghp)
}

// minimalMirror times the minimal client's first sync with the mirror's
// uploads on a fresh namespace and bucket.
func (s *scaleSet) minimalMirror(b *testing.B, sr *scaleRepo, ghp *scaleProxy) scaleResult {
	cf := cloudflaretest.New(cloudflaretest.Config{AccountID: cfAccountID, NamespaceID: cfNamespaceID, Token: cfToken, Seed: cfSeed})
	defer cf.Close()
	t := scaleTarget{gh: ghp, cf: newScaleProxy(b, cf.BaseURL(), *scaleLatency, cloudflareKind, nil, nil), s3: newS3Proxy(b, *scaleLatency)}
	m := newMinimalClient(t)
	up, err := newMinimalUploader(context.Background(), t.s3.URL(), m.concurrency)
	if err != nil {
		b.Fatal(err)
	}
	m.upload = up
	sr.at(sr.base)
	ghp.take()
	start := time.Now()
	wrote, err := m.firstSync(context.Background())
	r := scaleResult{wall: time.Since(start), rssKiB: -1, sumGitHub: -1, sumCloudflare: -1}
	r.ghKinds, r.ghConns = t.gh.take()
	r.cfKinds, r.cfConns = t.cf.take()
	r.s3Kinds, _ = t.s3.take()
	r.github, r.cloudflare, r.s3 = total(r.ghKinds), total(r.cfKinds), total(r.s3Kinds)
	switch {
	case err != nil:
		b.Errorf("minimal client with the mirror: %v", err)
		r.killed = err.Error()
	case wrote != s.n || r.s3Kinds["put"] != s.n:
		b.Errorf("minimal client with the mirror wrote %d policies and %d objects, want %d", wrote, r.s3Kinds["put"], s.n)
	}
	return r
}

// minimalUploader uploads each policy's object as the program renders it
// (mirror.Render, one PUT each through the same S3 client), at most
// concurrency at once, while the archive is read.
type minimalUploader struct {
	ctx    context.Context
	target *mirror.S3
	g      *errgroup.Group
}

func newMinimalUploader(ctx context.Context, endpoint string, concurrency int) (*minimalUploader, error) {
	target, err := mirror.NewS3(ctx, mirror.Config{Bucket: s3Bucket, Endpoint: endpoint, AccessKeyID: s3AccessKey, SecretAccessKey: s3Secret})
	if err != nil {
		return nil, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(concurrency)
	return &minimalUploader{ctx: gctx, target: target, g: g}, nil
}

// put uploads e's object with data as its content; it blocks while
// concurrency uploads are in flight.
func (u *minimalUploader) put(e policy.Entry, data []byte, lastUpdated string) {
	d := mirror.Doc{PolicyName: e.PolicyName, Title: e.Title, SHA: e.SHA, Path: e.Path, LastUpdated: lastUpdated, Content: data}
	u.g.Go(func() error {
		o, err := mirror.Render(mirror.DefaultPrefix, d)
		if err != nil {
			return err
		}
		_, err = u.target.Put(u.ctx, o)
		return err
	})
}

// wait waits for the uploads and returns the first error.
func (u *minimalUploader) wait() error { return u.g.Wait() }

// printMirror prints the content mirror's runs and targets, when the bench
// ran them.
func printMirror(w io.Writer, sets []*scaleSet) {
	var rows []string
	var checks []string
	for _, s := range sets {
		for _, run := range []string{runMirrorFirst, runMirrorMinimal, runMirrorIncr} {
			m, ok := s.median(run)
			if !ok {
				continue
			}
			rss, cpu := "—", "—"
			if m.rssKiB > 0 {
				rss, cpu = fmt.Sprintf("%.0f", float64(m.rssKiB)/1024), fmt.Sprintf("%.2f", m.cpu.Seconds())
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %s | %.2f | %d | %d | %d (%s) | %s | %s |", thousands(s.n), s.files(), run, m.wall.Seconds(), m.github, m.cloudflare, m.s3, kinds(m.s3Kinds), rss, cpu))
		}
		for _, c := range s.mirrorTargets() {
			met := "yes"
			if !c.met {
				met = "**no**"
			}
			checks = append(checks, fmt.Sprintf("| %s | %s | %s | %s | %s |", thousands(s.n), s.files(), c.what, c.got, met))
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprint(w, "\nContent mirror (-scale.mirror; S3 behind the same latency):\n\n| policies | files | run | wall (s) | GitHub requests | Cloudflare requests | S3 requests | peak RSS (MiB) | CPU (s) |\n|---:|---|---|---:|---:|---:|---|---:|---:|\n")
	fmt.Fprintln(w, strings.Join(rows, "\n"))
	fmt.Fprint(w, "\n| policies | files | target | measured | met |\n|---:|---|---|---|---|\n")
	fmt.Fprintln(w, strings.Join(checks, "\n"))
}

// mirrorTargets checks the targets for the mirror on the medians.
func (s *scaleSet) mirrorTargets() []scaleCheck {
	var out []scaleCheck
	first, okFirst := s.median(runMirrorFirst)
	minimal, okMin := s.median(runMirrorMinimal)
	incr, okIncr := s.median(runMirrorIncr)
	if okFirst && okMin {
		ratio := first.wall.Seconds() / minimal.wall.Seconds()
		out = append(out, scaleCheck{"first sync with the mirror ≤ 1.3× the minimal client with the same uploads", fmt.Sprintf("%.2f s vs %.2f s: %.2f×", first.wall.Seconds(), minimal.wall.Seconds(), ratio), ratio <= 1.3})
	}
	if okFirst {
		worst := s.worstRSSKiB(runMirrorFirst)
		out = append(out,
			scaleCheck{fmt.Sprintf("first sync with the mirror: peak RSS ≤ %d MiB (the worst repetition)", rssLimitMiB(s.n)), fmt.Sprintf("%.1f MiB (median %.1f)", float64(worst)/1024, float64(first.rssKiB)/1024),
				first.rssKiB > 0 && worst <= int64(rssLimitMiB(s.n))<<10},
			scaleCheck{"first sync with the mirror: one upload per policy", fmt.Sprintf("%d PUTs", first.s3Kinds["put"]), first.s3Kinds["put"] == s.n})
	}
	if okIncr {
		out = append(out, scaleCheck{"incremental with the mirror uploads only what changed (5 edits + 1 add = 6)", fmt.Sprintf("%d PUTs, %d delete requests", incr.s3Kinds["put"], incr.s3Kinds["delete"]), incr.s3Kinds["put"] == 6})
	}
	return out
}
