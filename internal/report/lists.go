package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/knue/syncjob/internal/policy"
)

// Policies prints the policies as a table and their count. What
// would repeat the first column is left out, so that a row of typical
// Hangul names fits 120 columns: a title that is the name, and the file
// name of a path that is {POLICY}.md (its folder shows).
func Policies(w io.Writer, list []policy.Entry) {
	t := &Table{}
	t.Add("POLICY", "TITLE", "FOLDER OR PATH", "SHA", "UPDATED")
	for _, e := range list {
		title := e.Title
		if title == e.PolicyName {
			title = "" // it would repeat the first column
		}
		t.Add(e.PolicyName, title, shortPath(e), Short(e.SHA), e.LastUpdated)
	}
	t.Write(w, "", Palette{})
	fmt.Fprintln(w, Count(len(list), "policy", "policies"))
}

// shortPath is e's folder ("규정/제1편/", "./" at the root) when its file
// is named for the policy, else its whole path.
func shortPath(e policy.Entry) string {
	if e.Path == "" || policy.NameOf(e.Path) != e.PolicyName {
		return e.Path
	}
	i := strings.LastIndexByte(e.Path, '/')
	if i < 0 {
		return "./"
	}
	return e.Path[:i+1]
}

// Queue prints the retry queue as a table and its count.
func Queue(w io.Writer, entries []policy.QueueEntry) {
	t := &Table{}
	t.Add("POLICY", "OPERATION", "SHA", "RETRIES", "CREATED", "ERROR")
	for _, e := range entries {
		msg := ""
		if e.ErrorMessage != nil {
			msg = *e.ErrorMessage
		}
		t.Add(e.PolicyName, e.Operation, Short(e.SHA), fmt.Sprint(e.RetryCount), e.CreatedAt, msg)
	}
	t.Write(w, "", Palette{})
	fmt.Fprintln(w, Count(len(entries), "entry", "entries"))
}

// DeadLetters prints the dead letters as a table and their count.
func DeadLetters(w io.Writer, letters []policy.DeadLetter) {
	t := &Table{}
	t.Add("POLICY", "OPERATION", "SHA", "TRIES", "DEAD SINCE", "REASON")
	for _, e := range letters {
		t.Add(e.PolicyName, e.Operation, Short(e.SHA), fmt.Sprint(e.RetryCount), e.DeadAt, e.Reason)
	}
	t.Write(w, "", Palette{})
	fmt.Fprintln(w, Count(len(letters), "dead letter", "dead letters"))
}
