package githubtest

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// catFile is one long-lived "git cat-file --batch-check" (or --batch)
// process of a repository: it answers what objects named by full id are,
// and holds, without a git process for each question. Names (branches) are
// never asked of it: a long-lived process may not see a ref move.
type catFile struct {
	mu   sync.Mutex
	in   io.WriteCloser
	out  *bufio.Reader
	wait func() error
}

// startCatFile starts git cat-file with mode ("--batch-check" or
// "--batch"); it ends when stop is called.
func (r *Repo) startCatFile(mode string) (*catFile, error) {
	cmd := r.command("cat-file", mode)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &catFile{in: in, out: bufio.NewReaderSize(out, 64<<10), wait: cmd.Wait}, nil
}

func (c *catFile) stop() {
	c.in.Close()
	_ = c.wait()
}

// ask sends one object name and reads its header, and with content the
// object's bytes; ok is false when there is no such object.
func (c *catFile) ask(name string, content bool) (id, kind string, size int, data []byte, ok bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := io.WriteString(c.in, name+"\n"); err != nil {
		return "", "", 0, nil, false, err
	}
	line, err := c.out.ReadString('\n')
	if err != nil {
		return "", "", 0, nil, false, err
	}
	f := strings.Fields(line)
	if len(f) == 2 && f[1] == "missing" {
		return "", "", 0, nil, false, nil
	}
	if len(f) != 3 {
		return "", "", 0, nil, false, fmt.Errorf("cat-file %s: %s", name, strings.TrimSpace(line))
	}
	if size, err = strconv.Atoi(f[2]); err != nil {
		return "", "", 0, nil, false, fmt.Errorf("cat-file %s: %s", name, strings.TrimSpace(line))
	}
	if content {
		data = make([]byte, size+1) // and the newline after it
		if _, err := io.ReadFull(c.out, data); err != nil {
			return "", "", 0, nil, false, err
		}
		data = data[:size]
	}
	return f[0], f[1], size, data, true, nil
}

// batched answers, from the repository's cat-file processes, the questions
// read would otherwise ask a new git process: resolving a full id
// (rev-parse --verify ID^{kind}), an object's size and a small blob's bytes.
// handled is false for any other question.
func (r *Repo) batched(args []string) (out []byte, handled bool, err error) {
	var name string
	var content bool
	switch {
	case args[0] == "rev-parse" && onlyVerifyFlags(args[1:len(args)-1]):
		name = args[len(args)-1]
	case len(args) == 3 && args[0] == "cat-file" && args[1] == "-s":
		name = args[2]
	case len(args) == 3 && args[0] == "cat-file" && args[1] == "blob":
		name, content = args[2], true
	default:
		return nil, false, nil
	}
	if !byIDArg.MatchString(name) || strings.Contains(name, "..") {
		return nil, false, nil
	}
	id, kind, size, data, ok, err := r.looseAnswer(name, content)
	if err == nil && !ok {
		id, kind, size, data, ok, err = r.catFileAnswer(name, content)
	}
	switch {
	case err != nil:
		return nil, true, err
	case !ok:
		return nil, true, fmt.Errorf("git %s: no such object", strings.Join(args, " "))
	case args[0] == "rev-parse":
		return []byte(id + "\n"), true, nil
	case !content:
		return []byte(strconv.Itoa(size) + "\n"), true, nil
	case kind != "blob" || size > maxCachedRead:
		return nil, false, nil // git says what is wrong; a big blob is not held
	}
	return data, true, nil
}

// catFileAnswer is what the cat-file processes say of name: its id, kind
// and size, and with content a small blob's bytes.
func (r *Repo) catFileAnswer(name string, content bool) (id, kind string, size int, data []byte, ok bool, err error) {
	check, err := r.catFile("--batch-check")
	if err != nil {
		return "", "", 0, nil, false, err
	}
	id, kind, size, _, ok, err = check.ask(name, false)
	if err != nil || !ok || !content || kind != "blob" || size > maxCachedRead {
		return id, kind, size, nil, ok, err
	}
	batch, err := r.catFile("--batch")
	if err != nil {
		return "", "", 0, nil, false, err
	}
	_, _, _, data, ok, err = batch.ask(id, true)
	return id, kind, size, data, ok, err
}

// catFile returns the repository's cat-file process of mode
// ("--batch-check" or "--batch"), started on first use; it ends with the
// test. Most repositories only ever need the first.
func (r *Repo) catFile(mode string) (*catFile, error) {
	r.catMu.Lock() // not r.mu: command takes it
	defer r.catMu.Unlock()
	p := &r.check
	if mode == "--batch" {
		p = &r.batch
	}
	if *p == nil {
		c, err := r.startCatFile(mode)
		if err != nil {
			return nil, err
		}
		*p = c
		r.t.Cleanup(c.stop)
	}
	return *p, nil
}

// onlyVerifyFlags reports whether rev-parse's flags just ask it to resolve
// the one name after them.
func onlyVerifyFlags(flags []string) bool {
	for _, f := range flags {
		if f != "-q" && f != "--verify" && f != "--end-of-options" {
			return false
		}
	}
	return true
}
