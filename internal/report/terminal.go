package main

import (
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/term"
)

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminalFile(f)
}

func isTerminalFile(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// eraseLine returns the cursor to the start of the line and clears it.
const eraseLine = "\r\x1b[K"

// statusLine is stderr on a terminal, where a progress line may stand: any
// other write (a log line, an error) first clears it, so that nothing is
// glued onto it. The next progress update draws it again.
type statusLine struct {
	mu    sync.Mutex
	w     io.Writer
	shown bool
}

func (s *statusLine) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shown {
		s.shown = false
		if _, err := io.WriteString(s.w, eraseLine); err != nil {
			return 0, err
		}
	}
	return s.w.Write(p)
}

// show replaces the progress line with text.
func (s *statusLine) show(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = io.WriteString(s.w, eraseLine+text)
	s.shown = true
}

// clear removes the progress line.
func (s *statusLine) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shown {
		_, _ = io.WriteString(s.w, eraseLine)
		s.shown = false
	}
}

// progress returns a callback that keeps one updating line of reading
// progress, gone once every policy is read.
func (s *statusLine) progress() func(done, total int) {
	return func(done, total int) {
		if done >= total {
			s.clear()
			return
		}
		s.show(fmt.Sprintf("reading policies %d/%d", done, total))
	}
}

// palette colours what syncjob prints on a terminal; its zero value (not a
// terminal, or NO_COLOR set: https://no-color.org) paints nothing.
type palette struct{ on bool }

// ANSI colours of the plan's symbols.
const (
	green   = "32"
	yellow  = "33"
	red     = "31"
	cyan    = "36"
	magenta = "35"
)

func (c palette) paint(colour, s string) string {
	if !c.on || colour == "" || s == "" {
		return s
	}
	return "\x1b[" + colour + "m" + s + "\x1b[0m"
}

// colours returns the palette for w: on when w is a terminal and NO_COLOR is
// not set.
func (p *program) colours(w io.Writer) palette {
	return palette{on: p.isTerminal(w) && p.getenv("NO_COLOR") == ""}
}
