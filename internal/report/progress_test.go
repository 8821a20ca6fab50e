package report_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/report"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// frames splits what the status line wrote into the lines drawn, each
// redraw (or clearing, "") after the erase sequence.
func frames(out string) []string {
	parts := strings.Split(out, "\r\x1b[K")
	return parts[1:] // what precedes the first erase is empty
}

func mustGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

// A long first sync of 5,000 policies on Cloudflare: read, titles, 10,000
// writes held once by the rate window and once by a 429, recorded.
func TestProgress_LongFirstSync_FramesGolden(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	clock := &fakeClock{now: time.Date(2026, 11, 25, 16, 0, 0, 0, time.UTC)}
	p := report.NewProgress(report.NewStatusLine(&b), clock.Now)

	p.Phase("reading")
	clock.Advance(3 * time.Second)
	p.Tick() // the time spent reading goes up
	p.Phase("planning")
	clock.Advance(300 * time.Millisecond)
	p.Tick() // due, but the line would not change: not drawn again
	p.Phase("titles")
	clock.Advance(2 * time.Second)
	p.Advance(200, 5000)
	clock.Advance(100 * time.Millisecond)
	p.Advance(210, 5000) // too soon after the last drawing: not drawn
	clock.Advance(25 * time.Second)
	p.Advance(2529, 5000)
	clock.Advance(24 * time.Second)
	p.Advance(5000, 5000) // the last count is always drawn
	p.Phase("applying")
	clock.Advance(10 * time.Second)
	p.Advance(400, 10000)
	p.Wait(4*time.Minute+12*time.Second, "Cloudflare's rate window")
	p.Wait(4*time.Minute+11*time.Second, "Cloudflare's rate window") // another batch, the same wait: not drawn again
	clock.Advance(time.Second)
	p.Tick() // the wait counts down
	clock.Advance(100 * time.Millisecond)
	p.Tick() // too soon: not drawn
	clock.Advance(4*time.Minute + 11*time.Second)
	p.Advance(1400, 10000) // the wait is over: the time left again
	p.Wait(33*time.Second+400*time.Millisecond, "Cloudflare's 429 (too many requests)")
	clock.Advance(34 * time.Second)
	clock.Advance(2 * time.Minute)
	p.Advance(10000, 10000)
	p.Phase("recording")
	clock.Advance(1500 * time.Millisecond)
	p.Tick()
	p.Stop()

	got := strings.Join(frames(b.String()), "\n") + "\n"
	mustGolden(t, "progress_first_sync.golden", got)
}

func TestProgress_DrawnAfterALogLine_NotGluedToIt(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	clock := &fakeClock{now: time.Date(2026, 11, 25, 16, 0, 0, 0, time.UTC)}
	line := report.NewStatusLine(&b)
	p := report.NewProgress(line, clock.Now)
	p.Phase("titles")
	clock.Advance(300 * time.Millisecond)
	p.Advance(1, 3)
	_, _ = line.Write([]byte("level=WARN msg=\"retrying request\"\n"))
	clock.Advance(700 * time.Millisecond)
	p.Advance(2, 3)
	p.Stop()
	want := "\r\x1b[Kreading titles\r\x1b[Kreading titles 1/3\r\x1b[Klevel=WARN msg=\"retrying request\"\n" +
		"\r\x1b[Kreading titles 2/3 · 2.0/s · 1s left\r\x1b[K"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
