package main

import (
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
)

// erase is what the status line writes before each drawing.
const erase = "\r\x1b[K"

func TestSync_Progress_OnATerminal_EveryPhaseAndTheLastCount(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	w.stderrTerminal = true
	w.env["LOG_FORMAT"] = "auto"
	r := w.sync(0)
	for _, want := range []string{
		erase + "reading the branch and the registry",
		erase + "planning",
		erase + "reading titles 3/3",
		erase + "applying writes 6/6", // three queue entries, three policies
		erase + "recording the run",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%q", want, r.stderr)
		}
	}
	// after the last erase, nothing or a log line: no drawing left standing
	if tail := r.stderr[strings.LastIndex(r.stderr, erase)+len(erase):]; tail != "" && !strings.HasPrefix(tail, "time=") {
		t.Errorf("the progress line is left standing: %q", tail)
	}
	if strings.Contains(r.stderr, "content mirror") {
		t.Errorf("a mirror's progress without a content mirror:\n%q", r.stderr)
	}
	if strings.Contains(r.stdout, "\x1b[K") {
		t.Errorf("progress on stdout:\n%q", r.stdout)
	}
}

func TestSync_Progress_NoneInJSONLogsPipedQuietOrJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		terminal  bool
		logFormat string
		args      []string
	}{
		{"piped, text logs", false, "text", nil}, // piped with auto logs is JSON: the case below
		{"terminal, JSON logs", true, "json", nil},
		{"terminal, --quiet", true, "auto", []string{"--quiet"}},
		{"terminal, --json", true, "auto", []string{"--json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			seed(w)
			w.stderrTerminal = tc.terminal
			w.env["LOG_FORMAT"] = tc.logFormat
			r := w.sync(0, tc.args...)
			for _, out := range []string{r.stderr, r.stdout} {
				if strings.Contains(out, "\x1b[K") || strings.Contains(out, "applying writes") || strings.Contains(out, "reading titles") {
					t.Errorf("progress drawn:\nstderr %q\nstdout %q", r.stderr, r.stdout)
				}
			}
		})
	}
}

func TestSync_Progress_Cloudflare429_WaitShown(t *testing.T) {
	t.Parallel()
	w := newCloudflareWorld(t)
	seed(w)
	w.stderrTerminal = true
	w.env["LOG_FORMAT"] = "auto"
	// The plan's first write meets a 429 asking for 40 s.
	var once sync.Once
	w.watchCloudflare(func(r *http.Request) {
		if isBulkWrite(r) && bodyMentions(r, registry.QueuePrefix) {
			once.Do(func() { w.cf.FailNext(cloudflaretest.RateLimit(40 * time.Second)) })
		}
	})
	r := w.sync(0)
	wait := regexp.MustCompile(`\r\x1b\[Kapplying writes 0/6 · waiting (\d+)s for Cloudflare's 429 \(too many requests\)`).FindStringSubmatch(r.stderr)
	if wait == nil {
		t.Fatalf("the 429's wait is not shown:\n%q", r.stderr)
	}
	if wait[1] < "40" || wait[1] > "44" {
		t.Errorf("waiting %ss, want the Retry-After (40s) and up to a tenth more", wait[1])
	}
}
