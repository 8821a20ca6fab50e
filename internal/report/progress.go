package report

import (
	"strconv"
	"sync"
	"time"
)

// progressGap is the least time between two drawings of the progress line
// (a phase change or a new wait draws at once): at most four a second.
const progressGap = 250 * time.Millisecond

// Progress keeps a run's progress on the status line: the phase, done of
// total with the rate and the time left, and the wait that holds the run
// (Cloudflare's rate window, a 429). It hears the syncer (syncer.Progress:
// Phase, Advance) and the Cloudflare store (Wait); Tick redraws a wait's
// countdown. Safe for concurrent use.
type Progress struct {
	line *StatusLine
	now  func() time.Time

	mu          sync.Mutex
	phase       string
	done, total int
	from        time.Time // when the phase began
	waitTill    time.Time // the run waits until then for waitFor
	waitFor     string
	drawn       time.Time // when the line was last drawn
}

// NewProgress returns the progress of a run drawn on line, timed by now.
func NewProgress(line *StatusLine, now func() time.Time) *Progress {
	return &Progress{line: line, now: now}
}

// Phase says a phase of the run began (syncer.Phase*).
func (p *Progress) Phase(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phase, p.done, p.total, p.from = name, 0, 0, p.now()
	p.draw(true)
}

// Advance says done of the phase's total are done.
func (p *Progress) Advance(done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done, p.total = done, total
	p.draw(done >= total)
}

// Wait says the run's requests wait d for why, from now.
func (p *Progress) Wait(d time.Duration, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	till := p.now().Add(d)
	if why == p.waitFor && !till.After(p.waitTill) {
		return // a concurrent request waits for the same
	}
	p.waitTill, p.waitFor = till, why
	p.draw(true)
}

// Tick redraws the line when it is due: a wait counts down, the time
// spent in a phase goes up.
func (p *Progress) Tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.draw(false)
}

// Stop removes the line.
func (p *Progress) Stop() { p.line.Clear() }

// Frame is the line as it would be drawn now.
func (p *Progress) Frame() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.frame(p.now())
}

// draw shows the line unless it was drawn less than progressGap ago (and
// force is not set).
func (p *Progress) draw(force bool) {
	now := p.now()
	if p.phase == "" || (!force && now.Sub(p.drawn) < progressGap) {
		return
	}
	p.line.show(p.frame(now))
	p.drawn = now
}

// phaseWords are what a person reads for each phase the syncer names.
var phaseWords = map[string]string{
	"reading":   "reading the branch and the registry",
	"planning":  "planning",
	"titles":    "reading titles",
	"mirroring": "uploading to the content mirror",
	"applying":  "applying writes",
	"recording": "recording the run",
}

// frame renders the line at now: "applying writes 1,200/5,000 · 41/s ·
// 1m33s left", or with "· waiting 4m12s for Cloudflare's rate window" in
// place of the time left while a wait holds the run.
func (p *Progress) frame(now time.Time) string {
	s, ok := phaseWords[p.phase]
	if !ok {
		s = p.phase
	}
	elapsed := now.Sub(p.from)
	var rate float64
	if p.total > 0 {
		s += " " + grouped(p.done) + "/" + grouped(p.total)
		if p.done > 0 && elapsed >= time.Second {
			rate = float64(p.done) / elapsed.Seconds()
			s += " · " + perSecond(rate)
		}
	} else if elapsed >= time.Second {
		s += " · " + elapsed.Round(time.Second).String()
	}
	if left := p.waitTill.Sub(now); left > 0 {
		return s + " · waiting " + roundUp(left).String() + " for " + p.waitFor
	}
	if rate > 0 && p.done < p.total {
		eta := time.Duration(float64(p.total-p.done) / rate * float64(time.Second))
		s += " · " + roundUp(eta).String() + " left"
	}
	return s
}

// roundUp is d in whole seconds, rounded up: a wait of 0.4 s reads "1s".
func roundUp(d time.Duration) time.Duration {
	return (d + time.Second - 1).Truncate(time.Second)
}

// perSecond reads a rate: "41/s", "2.5/s".
func perSecond(r float64) string {
	if r >= 10 {
		return grouped(int(r+0.5)) + "/s"
	}
	return strconv.FormatFloat(r, 'f', 1, 64) + "/s"
}

// grouped writes n with thousands separated: 5000 → "5,000".
func grouped(n int) string {
	s := strconv.Itoa(n)
	if n < 0 || len(s) <= 3 {
		return s
	}
	head := len(s) % 3
	if head == 0 {
		head = 3
	}
	out := s[:head]
	for i := head; i < len(s); i += 3 {
		out += "," + s[i:i+3]
	}
	return out
}
