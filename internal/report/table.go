package report

import (
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/mattn/go-runewidth"
)

// cells measures text as a terminal shows it: a Hangul syllable or another
// wide character takes two cells, a combining mark (or the vowel and final
// consonant of a decomposed syllable) none. Characters of ambiguous width,
// such as U+2024 (․), take one cell, as most terminals show them whatever
// the locale; the measure is the same on every machine.
var cells = func() *runewidth.Condition {
	c := runewidth.NewCondition()
	c.EastAsianWidth = false
	return c
}()

// Width is how many terminal cells s takes, as tables measure it.
func Width(s string) int { return cells.StringWidth(s) }

// Table lays out rows of text in columns aligned by screen width. The last
// cell of a row is not padded.
type Table struct {
	rows    [][]string
	colours []string // per row, the colour of its first cell ("": none)
}

// Add appends a row.
func (t *Table) Add(row ...string) { t.AddPainted("", row...) }

// AddPainted appends a row whose first cell is painted colour (on a
// terminal that shows colours).
func (t *Table) AddPainted(colour string, row ...string) {
	for i, c := range row {
		row[i] = Printable(c)
	}
	t.rows = append(t.rows, row)
	t.colours = append(t.colours, colour)
}

// Write prints the table, each row after indent.
func (t *Table) Write(w io.Writer, indent string, pal Palette) {
	var widths []int
	for _, row := range t.rows {
		for i, c := range row {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], cells.StringWidth(c))
		}
	}
	var b strings.Builder
	for r, row := range t.rows {
		for len(row) > 0 && row[len(row)-1] == "" {
			row = row[:len(row)-1]
		}
		b.WriteString(indent)
		for i, c := range row {
			cell := c
			if i == 0 {
				cell = pal.paint(t.colours[r], c)
			}
			b.WriteString(cell)
			if i < len(row)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-cells.StringWidth(c)+2))
			}
		}
		b.WriteByte('\n')
	}
	_, _ = io.WriteString(w, b.String())
}

// printable makes text from a file name, a title or a server's message safe
// to print in one cell of a terminal: invalid UTF-8 shows as U+FFFD, and a
// character that would steer the terminal or hide what it shows — a control
// character (a newline, an escape sequence), a bidi control that reverses
// the text after it, a line or paragraph separator, a zero-width character
// — as a visible escape such as \u202e. JSON output is not made printable:
// it stays exact.
func Printable(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if !strings.ContainsFunc(s, invisible) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if invisible(r) {
			fmt.Fprintf(&b, "\\u%04x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// invisible reports whether r steers a terminal or hides text: control
// characters (C0, C1), format characters (bidi controls U+202A-U+202E,
// U+2066-U+2069, U+200E, U+200F, U+061C; zero-width U+200B-U+200D,
// U+2060, U+FEFF), and the line and paragraph separators U+2028, U+2029.
func invisible(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}
