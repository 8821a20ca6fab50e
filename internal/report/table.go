package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

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
func Width(s string) int {
	if n, ok := plainWidth(s); ok {
		return n
	}
	return cells.StringWidth(s)
}

// plainWidth measures, without go-runewidth, text made only of printable
// ASCII, precomposed Hangul syllables (U+AC00–U+D7A3) and U+2024 (․):
// most names, paths and titles here. Each of these characters is a
// grapheme of its own, one cell wide or (a syllable) two, as cells
// measures it. go-runewidth builds a 2 MiB table the first time it
// measures a character past U+02FF, which costs a sync that prints its
// plan more CPU than anything else it does between its last request and
// its exit (docs/bench.md, "Round trips"). ok is false for
// any other text, which cells measures.
func plainWidth(s string) (n int, ok bool) {
	for i := 0; i < len(s); {
		if c := s[i]; c >= 0x20 && c < 0x7f {
			n, i = n+1, i+1
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r >= 0xAC00 && r <= 0xD7A3:
			n += 2
		case r == '\u2024':
			n++
		default:
			return 0, false
		}
		i += size
	}
	return n, true
}

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
	WriteRows(w, indent, pal, func(add func(colour string, row ...string) bool) {
		for r, row := range t.rows {
			if !add(t.colours[r], row...) {
				return
			}
		}
	}, -1)
}

// Rows gives a table's rows one at a time to add, which says whether to go
// on; each row's first cell is painted colour ("": none). A long table
// given this way is not held: WriteRows goes over it twice, once to measure
// its columns and once to print it.
type Rows func(add func(colour string, row ...string) bool)

// WriteRows prints the first limit rows of rows (all of them when limit is
// negative), aligned as a Table is, each after indent, and says how many
// rows there were in all. Cells are made printable as Table.AddPainted
// makes them.
func WriteRows(w io.Writer, indent string, pal Palette, rows Rows, limit int) int {
	var widths []int
	n := 0
	rows(func(_ string, row ...string) bool {
		if limit < 0 || n < limit {
			for i, c := range row {
				if i == len(widths) {
					widths = append(widths, 0)
				}
				widths[i] = max(widths[i], Width(Printable(c)))
			}
		}
		n++
		return true
	})
	b := bufio.NewWriterSize(w, 64<<10)
	shown := 0
	rows(func(colour string, row ...string) bool {
		if limit >= 0 && shown == limit {
			return false
		}
		shown++
		writeRow(b, indent, pal, colour, row, widths)
		return true
	})
	_ = b.Flush()
	return n
}

// writeRow prints one row: its cells made printable, padded to widths but
// the last, trailing empty cells left out.
func writeRow(b *bufio.Writer, indent string, pal Palette, colour string, row []string, widths []int) {
	for len(row) > 0 && row[len(row)-1] == "" {
		row = row[:len(row)-1]
	}
	_, _ = b.WriteString(indent)
	for i, c := range row {
		c = Printable(c)
		cell := c
		if i == 0 {
			cell = pal.paint(colour, c)
		}
		_, _ = b.WriteString(cell)
		if i < len(row)-1 {
			_, _ = b.WriteString(strings.Repeat(" ", widths[i]-Width(c)+2))
		}
	}
	_ = b.WriteByte('\n')
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
