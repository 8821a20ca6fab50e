package githubtest

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The questions the server asks most after objects by id — how many
// commits one has that another lacks (rev-list --count), their merge base,
// and a tree's listing (ls-tree) — are answered here from loose objects
// when every object they touch is loose; otherwise by git. Each answer is
// git's (TestRead_HistoryFromLooseObjects_AsGitAnswers).

// parsedCommits are commits read from loose objects, by id: an id names
// the same commit in every repository.
var parsedCommits sync.Map // id → []string (parents)

// parents is the parent list of commit id; ok is false when it is not a
// loose commit here (git answers then).
func (r *Repo) parents(id string) ([]string, bool) {
	if p, ok := parsedCommits.Load(id); ok && r.hasLoose(id) {
		return p.([]string), true
	}
	kind, _, data, ok, err := r.looseObject(id, true)
	if !ok || err != nil || kind != "commit" {
		return nil, false
	}
	var parents []string
	for line := range strings.SplitSeq(string(data), "\n") {
		if line == "" {
			break // the message follows
		}
		if p, found := strings.CutPrefix(line, "parent "); found {
			parents = append(parents, p)
		}
	}
	parsedCommits.Store(id, parents)
	return parents, true
}

// ancestors is every commit reachable from id, id included; ok is false
// when one of them is not loose.
func (r *Repo) ancestors(id string) (map[string]bool, bool) {
	seen := map[string]bool{}
	stack := []string{id}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[c] {
			continue
		}
		parents, ok := r.parents(c)
		if !ok {
			return nil, false
		}
		seen[c] = true
		stack = append(stack, parents...)
	}
	return seen, true
}

// ancestries are the ancestors of a and of b (see ancestors).
func (r *Repo) ancestries(a, b string) (ofA, ofB map[string]bool, ok bool) {
	if ofA, ok = r.ancestors(a); ok {
		ofB, ok = r.ancestors(b)
	}
	return ofA, ofB, ok
}

// beyond is how many commits of ofB are not in ofA: rev-list --count a..b.
func beyond(ofA, ofB map[string]bool) int {
	n := 0
	for c := range ofB {
		if !ofA[c] {
			n++
		}
	}
	return n
}

// history answers rev-list --count A..B --, merge-base A B and ls-tree of
// a full id; handled is false for any other question or when git must
// answer.
func (r *Repo) history(args []string) (out []byte, handled bool, err error) {
	switch {
	case len(args) == 4 && args[0] == "rev-list" && args[1] == "--count" && args[3] == "--":
		a, b, found := strings.Cut(args[2], "..")
		if !found || !isID(a) || !isID(b) {
			return nil, false, nil
		}
		return r.countRange(a, b)
	case len(args) == 3 && args[0] == "merge-base" && isID(args[1]) && isID(args[2]):
		return r.mergeBase(args[1], args[2])
	case len(args) > 3 && args[0] == "log" && args[1] == "-z" && args[2] == logFormat:
		return r.log(args)
	case args[0] == "ls-tree" && args[len(args)-1] == "--" && isID(args[len(args)-2]):
		flags := strings.Join(args[1:len(args)-2], " ")
		if flags != "-z -l --full-tree" && flags != "-z -l --full-tree -r -t" {
			return nil, false, nil
		}
		return r.listTree(args[len(args)-2], strings.HasSuffix(flags, "-r -t"))
	}
	return nil, false, nil
}

func isID(s string) bool { return len(s) == 40 && len(objectIDs([]byte(s))) == 1 }

// countRange is rev-list --count a..b: the commits b reaches and a does not.
func (r *Repo) countRange(a, b string) ([]byte, bool, error) {
	ofA, ofB, ok := r.ancestries(a, b)
	if !ok {
		return nil, false, nil
	}
	return []byte(strconv.Itoa(beyond(ofA, ofB)) + "\n"), true, nil
}

// mergeBase is git merge-base a b when the two have exactly one best
// common ancestor (one that is no other common ancestor's ancestor); git
// chooses among several.
func (r *Repo) mergeBase(a, b string) ([]byte, bool, error) {
	ofA, ofB, ok := r.ancestries(a, b)
	if !ok {
		return nil, false, nil
	}
	best := map[string]bool{}
	for c := range ofA {
		if ofB[c] {
			best[c] = true
		}
	}
	if len(best) == 0 {
		return nil, true, fmt.Errorf("git merge-base %s %s: no common ancestor", a, b)
	}
	for c := range maps.Clone(best) { // the common ancestors are closed under parents
		parents, _ := r.parents(c)
		for _, p := range parents {
			delete(best, p)
		}
	}
	if len(best) != 1 {
		return nil, false, nil
	}
	for c := range best {
		return []byte(c + "\n"), true, nil
	}
	return nil, false, nil
}

// listTree is ls-tree -z -l --full-tree [-r -t] of a commit or tree id.
func (r *Repo) listTree(id string, recursive bool) ([]byte, bool, error) {
	kind, _, data, ok, err := r.looseObject(id, true)
	if !ok || err != nil {
		return nil, false, nil
	}
	switch kind {
	case "commit":
		tree, found := treeOf(data)
		if !found {
			return nil, false, nil
		}
		return r.listTree(tree, recursive)
	case "tree":
	default:
		return nil, false, nil
	}
	var out bytes.Buffer
	if !r.writeListing(&out, data, "", recursive) {
		return nil, false, nil
	}
	return out.Bytes(), true, nil
}

// writeListing writes ls-tree's records of the tree object data under
// prefix; false when an object it needs is not loose.
func (r *Repo) writeListing(out *bytes.Buffer, data []byte, prefix string, recursive bool) bool {
	entries, ok := parseTree(data)
	if !ok {
		return false
	}
	for _, e := range entries {
		mode, name, id := e.mode, prefix+e.name, e.id
		kind, size := "blob", "-"
		switch mode {
		case 0o40000:
			kind = "tree"
		case 0o160000:
			kind = "commit"
		default:
			_, n, _, ok, err := r.looseObject(id, false)
			if !ok || err != nil {
				return false
			}
			size = strconv.Itoa(n)
		}
		fmt.Fprintf(out, "%06o %s %s %7s\t%s\x00", mode, kind, id, size, name)
		if kind == "tree" && recursive {
			_, _, sub, ok, err := r.looseObject(id, true)
			if !ok || err != nil || !r.writeListing(out, sub, name+"/", true) {
				return false
			}
		}
	}
	return true
}

// hasLoose reports whether object id is a loose object here.
func (r *Repo) hasLoose(id string) bool {
	_, err := os.Stat(filepath.Join(r.dir, ".git", "objects", id[:2], id[2:]))
	return err == nil
}

// logFormat is the one format the server asks git log for.
const logFormat = "--format=%H%x1f%T%x1f%P%x1f%an%x1f%ae%x1f%aI%x1f%cn%x1f%ce%x1f%cI%x1f%B"

// log answers git log -z logFormat of one commit (-1 ID --) or of a range
// (--reverse --topo-order A..B --) when the range is one line of commits
// with one parent each: git orders merges.
func (r *Repo) log(args []string) ([]byte, bool, error) {
	var ids []string
	switch rest := args[3:]; {
	case len(rest) == 3 && rest[0] == "-1" && isID(rest[1]) && rest[2] == "--":
		ids = []string{rest[1]}
	case len(rest) == 4 && rest[0] == "--reverse" && rest[1] == "--topo-order" && rest[3] == "--":
		a, b, found := strings.Cut(rest[2], "..")
		if !found || !isID(a) || !isID(b) {
			return nil, false, nil
		}
		var ok bool
		if ids, ok = r.line(a, b); !ok {
			return nil, false, nil
		}
	default:
		return nil, false, nil
	}
	var out bytes.Buffer
	for _, id := range ids {
		if !r.writeLogRecord(&out, id) {
			return nil, false, nil
		}
	}
	return out.Bytes(), true, nil
}

// line is the commits b reaches and a does not, oldest first, when they
// are one line of commits with one parent each.
func (r *Repo) line(a, b string) ([]string, bool) {
	ofA, ofB, ok := r.ancestries(a, b)
	if !ok {
		return nil, false
	}
	var ids []string
	for c := b; ofB[c] && !ofA[c]; {
		parents, _ := r.parents(c)
		if len(parents) > 1 {
			return nil, false
		}
		ids = append(ids, c)
		if len(parents) == 0 {
			break
		}
		c = parents[0]
	}
	if len(ids) != beyond(ofA, ofB) {
		return nil, false
	}
	slices.Reverse(ids)
	return ids, true
}

// writeLogRecord writes commit id as git log -z logFormat does.
func (r *Repo) writeLogRecord(out *bytes.Buffer, id string) bool {
	kind, _, data, ok, err := r.looseObject(id, true)
	if !ok || err != nil || kind != "commit" {
		return false
	}
	head, message, found := strings.Cut(string(data), "\n\n")
	if !found {
		return false
	}
	var tree string
	var parents []string
	var author, committer []string
	for line := range strings.SplitSeq(head, "\n") {
		key, value, _ := strings.Cut(line, " ")
		switch key {
		case "tree":
			tree = value
		case "parent":
			parents = append(parents, value)
		case "author":
			author = signatureFields(value)
		case "committer":
			committer = signatureFields(value)
		default:
			return false // gpgsig, encoding, ...: git knows
		}
	}
	if tree == "" || author == nil || committer == nil {
		return false
	}
	fields := append([]string{id, tree, strings.Join(parents, " ")}, author...)
	fields = append(append(fields, committer...), message)
	out.WriteString(strings.Join(fields, "\x1f"))
	out.WriteByte(0)
	return true
}

// signatureFields are the name, email and strict ISO date of an author
// or committer line ("Name <email> 1704067205 +0000"); nil when it is not
// one.
func signatureFields(s string) []string {
	lt, gt := strings.LastIndex(s, " <"), strings.LastIndex(s, "> ")
	if lt < 0 || gt < lt {
		return nil
	}
	when := strings.Fields(s[gt+2:])
	if len(when) != 2 || len(when[1]) != 5 {
		return nil
	}
	secs, err1 := strconv.ParseInt(when[0], 10, 64)
	hours, err2 := strconv.Atoi(when[1][1:3])
	minutes, err3 := strconv.Atoi(when[1][3:5])
	if err1 != nil || err2 != nil || err3 != nil {
		return nil
	}
	offset := hours*3600 + minutes*60
	if when[1][0] == '-' {
		offset = -offset
	}
	date := time.Unix(secs, 0).In(time.FixedZone("", offset)).Format("2006-01-02T15:04:05-07:00")
	return []string{s[:lt], s[lt+2 : gt], date}
}
