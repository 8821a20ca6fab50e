package main

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/term"
)

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminalFile(f)
}

func isTerminalFile(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// progress returns a callback that keeps one updating line on a terminal.
func progress(w io.Writer) func(done, total int) {
	return func(done, total int) {
		fmt.Fprintf(w, "\rreading policies %d/%d", done, total)
		if done >= total {
			fmt.Fprint(w, "\n")
		}
	}
}
