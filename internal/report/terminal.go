package report

import (
	"io"
	"os"
	"sync"

	"golang.org/x/term"
)

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && IsTerminalFile(f)
}

// IsTerminalFile reports whether f is a terminal.
func IsTerminalFile(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// eraseLine returns the cursor to the start of the line and clears it.
const eraseLine = "\r\x1b[K"

// StatusLine is stderr on a terminal, where a progress line may stand: any
// other write (a log line, an error) first clears it, so that nothing is
// glued onto it. The next progress update draws it again.
type StatusLine struct {
	mu    sync.Mutex
	w     io.Writer
	shown bool
	text  string // what stands, when shown
}

// NewStatusLine returns the status line over w (stderr).
func NewStatusLine(w io.Writer) *StatusLine { return &StatusLine{w: w} }

func (s *StatusLine) Write(p []byte) (int, error) {
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

// show replaces the progress line with text, unless text stands already.
func (s *StatusLine) show(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shown && s.text == text {
		return
	}
	_, _ = io.WriteString(s.w, eraseLine+text)
	s.shown, s.text = true, text
}

// Clear removes the progress line.
func (s *StatusLine) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shown {
		_, _ = io.WriteString(s.w, eraseLine)
		s.shown = false
	}
}

// Palette colours what syncjob prints on a terminal; its zero value (not a
// terminal, or NO_COLOR set: https://no-color.org) paints nothing.
type Palette struct{ On bool }

// ANSI colours of the plan's symbols.
const (
	green   = "32"
	yellow  = "33"
	red     = "31"
	cyan    = "36"
	magenta = "35"
)

func (c Palette) paint(colour, s string) string {
	if !c.On || colour == "" || s == "" {
		return s
	}
	return "\x1b[" + colour + "m" + s + "\x1b[0m"
}
