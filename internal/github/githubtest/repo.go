package githubtest

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Repo is a real git repository in a test's temporary folder. Its methods fail
// the test on any git error. Commits get deterministic dates (one second apart
// from 2024-01-01), so a scenario built the same way gets the same shas.
type Repo struct {
	t    testing.TB
	dir  string
	home string

	mu      sync.Mutex
	commits int // commits made so far: the next commit's date
	// reads caches this repository's answers to read-only questions about
	// names (see read), emptied whenever Git runs; has is every object id
	// its answers named, which it therefore has.
	reads map[string][]byte
	has   map[string]bool
	// check and batch answer questions about objects by full id (see
	// batched), started on first use under catMu.
	catMu        sync.Mutex
	check, batch *catFile
	// viaGit says a test staged by hand: Commit leaves staging and the
	// commit to git from then on (see commit.go); untracked then says a
	// path may have appeared since the last commit (a new file, a move, a
	// symlink, a git command): Commit stages with add -A, otherwise commit
	// -a stages the changes in one git process less.
	viaGit, untracked bool
	// indexStale says HEAD moved by a commit written here, not by git;
	// hashes are the work tree's blob ids as last hashed, by path.
	indexStale bool
	hashes     map[string]hashed
	objectDirs map[string]bool // .git/objects/xx made
}

// NewRepo initialises an empty repository whose current branch is "main".
func NewRepo(t testing.TB) *Repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("githubtest: git not found: %v", err)
	}
	r := &Repo{t: t, dir: filepath.Join(t.TempDir(), "repo"), home: t.TempDir(), untracked: true}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		t.Fatalf("githubtest: %v", err)
	}
	r.init()
	return r
}

// init lays out what "git init --template= -b main" would, without a git
// process (hundreds of tests each make a repository).
func (r *Repo) init() {
	r.t.Helper()
	git := filepath.Join(r.dir, ".git")
	for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags"} {
		if err := os.MkdirAll(filepath.Join(git, d), 0o755); err != nil {
			r.t.Fatalf("githubtest: init: %v", err)
		}
	}
	files := map[string]string{
		"HEAD":   "ref: refs/heads/main\n",
		"config": "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(git, name), []byte(content), 0o644); err != nil {
			r.t.Fatalf("githubtest: init: %v", err)
		}
	}
}

// head is the commit HEAD points at, read from the files a commit has just
// written (a loose ref: nothing here packs refs); git answers otherwise.
func (r *Repo) head() string {
	r.t.Helper()
	if _, sha, err := r.headRef(); err == nil && sha != "" {
		return sha
	}
	return r.Git("rev-parse", "HEAD")
}

// Dir is the work tree. Change refs only through Git and the methods: the
// server's answers about branch names are cached until Git runs again.
func (r *Repo) Dir() string { return r.dir }

// env isolates git from the machine's configuration and pins identities and dates.
func (r *Repo) env(date string) []string {
	env := []string{
		"HOME=" + r.home,
		"XDG_CONFIG_HOME=" + r.home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_AUTHOR_NAME=githubtest",
		"GIT_AUTHOR_EMAIL=githubtest@example.invalid",
		"GIT_COMMITTER_NAME=githubtest",
		"GIT_COMMITTER_EMAIL=githubtest@example.invalid",
		"GIT_AUTHOR_DATE=" + date,
		"GIT_COMMITTER_DATE=" + date,
		"GIT_TERMINAL_PROMPT=0",
		"LC_ALL=C",
	}
	if p, ok := os.LookupEnv("PATH"); ok {
		env = append(env, "PATH="+p)
	}
	return env
}

// command is git with quoting and unicode folding disabled, in the
// repository, with the isolated environment.
func (r *Repo) command(args ...string) *exec.Cmd {
	r.mu.Lock()
	date := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.commits) * time.Second).Format(time.RFC3339)
	r.mu.Unlock()
	full := append([]string{
		"-c", "core.quotepath=false",
		"-c", "core.precomposeunicode=false",
		"-c", "core.autocrlf=false",
		"-c", "commit.gpgsign=false",
		"-c", "init.defaultBranch=main",
		"-c", "merge.ff=true",
		// no "git maintenance run --auto" after each commit: a process
		// that costs more than the commit
		"-c", "gc.auto=0",
		"-c", "maintenance.auto=false",
	}, args...)
	cmd := exec.Command("git", full...)
	cmd.Dir = r.dir
	cmd.Env = r.env(date)
	return cmd
}

// git runs git (see command); it returns stdout.
func (r *Repo) git(stdin []byte, args ...string) ([]byte, error) {
	cmd := r.command(args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// gitTo runs git (see command) with its stdout streamed to w, never held
// whole; a failing w (a client that hung up) ends git.
func (r *Repo) gitTo(w io.Writer, args ...string) error {
	cmd := r.command(args...)
	var stderr bytes.Buffer
	cmd.Stdout = w
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// readOnly are the git commands that change nothing: Git answers them
// through read's caches.
var readOnly = map[string]bool{"cat-file": true, "rev-parse": true, "ls-tree": true, "rev-list": true, "merge-base": true, "log": true, "diff": true}

// Git runs any git command in the repository and returns its trimmed stdout.
// A command that may change refs drops the cached answers about names.
func (r *Repo) Git(args ...string) string {
	r.t.Helper()
	if len(args) > 0 && readOnly[args[0]] {
		out, err := r.read(args...)
		if err != nil {
			r.t.Fatalf("githubtest: %v", err)
		}
		return strings.TrimSpace(string(out))
	}
	r.mu.Lock()
	r.reads = nil
	if len(args) == 0 || args[0] != "commit" {
		r.untracked = true
	}
	r.mu.Unlock()
	if len(args) > 0 {
		if err := r.beforeGit(args[0]); err != nil {
			r.t.Fatalf("githubtest: %v", err)
		}
	}
	out, err := r.git(nil, args...)
	if err != nil {
		r.t.Fatalf("githubtest: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// maxCachedRead bounds one cached answer: big blobs are read again.
const maxCachedRead = 1 << 20

// objectID matches a full object id; byIDArg an argument that names objects
// by full id only: an id, a peeled id (id^{tree}), a range of two ids or a
// path in a commit (id:path).
var (
	objectID = regexp.MustCompile(`[0-9a-f]{40}`)
	byIDArg  = regexp.MustCompile(`^[0-9a-f]{40}((\^\{[a-z]+\})?(\.\.\.?[0-9a-f]{40})?|:[^\x00\n]+)$`)
)

// objectIDs are the matches of objectID in b, as FindAll finds them (a run
// of 80 hex digits is two), without a regular expression: every answer git
// gives is scanned, some of them megabytes.
func objectIDs(b []byte) [][]byte {
	var ids [][]byte
	for i := 0; i < len(b); {
		j := i
		for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] >= 'a' && b[j] <= 'f') {
			j++
		}
		for ; i+40 <= j; i += 40 {
			ids = append(ids, b[i:i+40])
		}
		i = j + 1
	}
	return ids
}

// answers holds git's answers to read-only questions that name objects by
// full id only (cat-file blob ID, ls-tree TREE, diff A B): an object id is
// its content's hash, so the answer is the same in every repository that has
// the objects. The tests of a package build the same seed histories (commit
// dates are fixed, so the shas agree) in hundreds of repositories, and each
// git process costs milliseconds.
var answers sync.Map // question → []byte

// read runs a read-only git command (see git), answering from a cache when
// it can: a question by full ids comes from answers once this repository is
// known to have every object it names (it named them in an earlier answer);
// any other question (a branch name) from this repository's own cache, which
// Git empties. Only successful answers are kept; the returned bytes are
// shared and must not be changed.
func (r *Repo) read(args ...string) ([]byte, error) {
	question := strings.Join(args, "\x00")
	byID := true
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "-") && a != "blob" && !byIDArg.MatchString(a) {
			byID = false
		}
	}
	if out, ok := r.cached(question, byID, args); ok {
		return out, nil
	}
	out, handled, err := r.batched(args)
	if !handled {
		out, handled, err = r.history(args)
	}
	if !handled {
		out, err = r.git(nil, args...)
	}
	if err != nil || len(out) > maxCachedRead {
		return out, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.learn(args, out)
	if byID {
		answers.Store(question, out)
		return out, nil
	}
	if r.reads == nil {
		r.reads = make(map[string][]byte)
	}
	r.reads[question] = out
	return out, nil
}

// cached answers question from the caches read keeps, if it can.
func (r *Repo) cached(question string, byID bool, args []string) ([]byte, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !byID {
		out, ok := r.reads[question]
		return out, ok
	}
	for _, a := range args[1:] {
		for _, id := range objectIDs([]byte(a)) {
			if !r.has[string(id)] {
				return nil, false
			}
		}
	}
	out, ok := answers.Load(question)
	if !ok {
		return nil, false
	}
	r.learn(args, out.([]byte))
	return out.([]byte), true
}

// learn notes the object ids a question and its answer name as this
// repository's; r.mu is held.
func (r *Repo) learn(args []string, out []byte) {
	if r.has == nil {
		r.has = make(map[string]bool)
	}
	for _, a := range args[1:] {
		for _, id := range objectIDs([]byte(a)) {
			r.has[string(id)] = true
		}
	}
	if args[0] != "cat-file" { // a file's content may quote ids it lacks
		for _, id := range objectIDs(out) {
			r.has[string(id)] = true
		}
	}
}

func (r *Repo) abs(path string) string {
	r.t.Helper()
	if path == "" || filepath.IsAbs(path) || strings.HasPrefix(filepath.Clean(path), "..") {
		r.t.Fatalf("githubtest: path %q must be relative to the repository", path)
	}
	return filepath.Join(r.dir, filepath.FromSlash(path))
}

// created notes that path appears in the work tree unless it is there
// already (then git tracks it, or an earlier call noted it).
func (r *Repo) created(path string) {
	if _, err := os.Lstat(path); err != nil {
		r.markUntracked()
	}
}

// markUntracked makes the next Commit stage with add -A.
func (r *Repo) markUntracked() {
	r.mu.Lock()
	r.untracked = true
	r.mu.Unlock()
}

// Write creates or replaces a file, creating its folders. Path bytes are kept
// as given (NFD stays NFD).
func (r *Repo) Write(path, content string) {
	r.t.Helper()
	p := r.abs(path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatalf("githubtest: write %s: %v", path, err)
	}
	r.created(p)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatalf("githubtest: write %s: %v", path, err)
	}
}

// WriteFrom creates or replaces a file with what content yields, streamed
// to disk: a file larger than a test would hold in memory (see Fill).
func (r *Repo) WriteFrom(path string, content io.Reader) {
	r.t.Helper()
	p := r.abs(path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatalf("githubtest: write %s: %v", path, err)
	}
	r.created(p)
	f, err := os.Create(p)
	if err != nil {
		r.t.Fatalf("githubtest: write %s: %v", path, err)
	}
	_, err = io.Copy(f, content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.t.Fatalf("githubtest: write %s: %v", path, err)
	}
}

// Remove deletes a file or a whole folder from the work tree (staged at Commit).
func (r *Repo) Remove(path string) {
	r.t.Helper()
	p := r.abs(path)
	if _, err := os.Lstat(p); err != nil {
		r.t.Fatalf("githubtest: remove %s: %v", path, err)
	}
	if err := os.RemoveAll(p); err != nil {
		r.t.Fatalf("githubtest: remove %s: %v", path, err)
	}
}

// Chmod makes a file executable (mode 100755) or not (100644), as
// `chmod +x` / `chmod -x` does; staged at Commit.
func (r *Repo) Chmod(path string, executable bool) {
	r.t.Helper()
	mode := os.FileMode(0o644)
	if executable {
		mode = 0o755
	}
	if err := os.Chmod(r.abs(path), mode); err != nil {
		r.t.Fatalf("githubtest: chmod %s: %v", path, err)
	}
}

// Move renames a file or folder, creating the destination's folders.
func (r *Repo) Move(from, to string) {
	r.t.Helper()
	src, dst := r.abs(from), r.abs(to)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		r.t.Fatalf("githubtest: move %s: %v", from, err)
	}
	r.markUntracked() // a move makes a new path
	if err := os.Rename(src, dst); err != nil {
		r.t.Fatalf("githubtest: move %s to %s: %v", from, to, err)
	}
}

// Symlink creates a symbolic link at path pointing at target (mode 120000).
func (r *Repo) Symlink(path, target string) {
	r.t.Helper()
	p := r.abs(path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatalf("githubtest: symlink %s: %v", path, err)
	}
	r.markUntracked()
	if err := os.Symlink(target, p); err != nil {
		r.t.Fatalf("githubtest: symlink %s: %v", path, err)
	}
}

// Submodule records a gitlink (mode 160000, a submodule) at path pointing at
// commit, without any .gitmodules; staged immediately, kept by Commit.
func (r *Repo) Submodule(path, commit string) {
	r.t.Helper()
	if err := os.MkdirAll(r.abs(path), 0o755); err != nil {
		r.t.Fatalf("githubtest: submodule %s: %v", path, err)
	}
	r.Git("update-index", "--add", "--cacheinfo", "160000,"+commit+","+path)
}

// Commit stages everything (as git add -A would) and commits, allowing empty commits.
// It returns the new commit sha.
func (r *Repo) Commit(msg string) string {
	r.t.Helper()
	r.mu.Lock()
	viaGit, untracked := r.viaGit, r.untracked
	r.mu.Unlock()
	if !viaGit {
		r.tick()
		id, err := r.writeCommit(msg)
		if err != nil {
			r.t.Fatalf("githubtest: commit: %v", err)
		}
		return id
	}
	commit := []string{"commit", "-q", "--allow-empty", "--no-verify", "-m", msg}
	if untracked {
		r.Git("add", "-A")
	} else {
		commit = append(commit, "--all") // tracked files changed or removed
	}
	r.tick()
	r.Git(commit...)
	r.mu.Lock()
	r.untracked = false
	r.mu.Unlock()
	return r.head()
}

// EmptyCommits adds n commits that change nothing to the current branch,
// in one git process (git fast-import), and returns the last one's sha.
// Their dates follow on, as Commit's do.
func (r *Repo) EmptyCommits(n int, msg string) string {
	r.t.Helper()
	branch := r.Git("symbolic-ref", "HEAD")
	parent := r.head()
	var in bytes.Buffer
	for i := range n {
		r.tick()
		r.mu.Lock()
		when := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.commits) * time.Second).Unix()
		r.mu.Unlock()
		text := fmt.Sprintf("%s %d\n", msg, i) // as git commit -m writes it
		fmt.Fprintf(&in, "commit %s\nauthor githubtest <githubtest@example.invalid> %d +0000\ncommitter githubtest <githubtest@example.invalid> %d +0000\ndata %d\n%s", branch, when, when, len(text), text)
		if i == 0 {
			fmt.Fprintf(&in, "from %s\n", parent)
		}
		in.WriteString("\n")
	}
	r.mu.Lock()
	r.reads = nil
	r.mu.Unlock()
	if _, err := r.git(in.Bytes(), "fast-import", "--quiet", "--force"); err != nil {
		r.t.Fatalf("githubtest: %v", err)
	}
	return r.head()
}

// Branch creates a branch at the current commit (it does not switch to it).
func (r *Repo) Branch(name string) {
	r.t.Helper()
	r.Git("branch", "--", name)
}

// Checkout switches to an existing branch.
func (r *Repo) Checkout(name string) {
	r.t.Helper()
	r.Git("checkout", "-q", name, "--")
}

// Merge merges branch name into the current branch with a real merge commit
// (--no-ff) and returns its sha.
func (r *Repo) Merge(name string) string {
	r.t.Helper()
	r.tick()
	r.Git("merge", "-q", "--no-ff", "--no-edit", "-m", "Merge branch '"+name+"'", name)
	return r.head()
}

// Reset moves the current branch to commit (git reset --hard), which is what a
// force-push does to the remote branch.
func (r *Repo) Reset(commit string) {
	r.t.Helper()
	r.Git("reset", "-q", "--hard", commit)
}

func (r *Repo) tick() {
	r.mu.Lock()
	r.commits++
	r.mu.Unlock()
}

// Head returns the commit sha a branch points at.
func (r *Repo) Head(branch string) string {
	r.t.Helper()
	if sha, ok := r.branchFile("refs/heads/" + branch); ok {
		return sha
	}
	return r.Git("rev-parse", "--verify", "refs/heads/"+branch+"^{commit}")
}

// BlobSHA returns the blob sha of path at commit.
func (r *Repo) BlobSHA(commit, path string) string {
	r.t.Helper()
	return r.Git("rev-parse", "--verify", commit+":"+path)
}

// Files returns path → blob sha of every regular file (mode 100644 or 100755)
// at commit; symlinks and submodules are left out.
func (r *Repo) Files(commit string) map[string]string {
	r.t.Helper()
	entries, err := r.lsTree(commit, true)
	if err != nil {
		r.t.Fatalf("githubtest: files %s: %v", commit, err)
	}
	files := make(map[string]string)
	for _, e := range entries {
		if e.Type == "blob" && (e.Mode == "100644" || e.Mode == "100755") {
			files[e.Path] = e.SHA
		}
	}
	return files
}

type treeEntry struct {
	Mode, Type, SHA, Path string
	Size                  int64 // -1 for trees and commits
}

// lsTree lists a tree-ish; recursive lists sub-trees too (-r -t), as GitHub does.
func (r *Repo) lsTree(treeish string, recursive bool) ([]treeEntry, error) {
	args := []string{"ls-tree", "-z", "-l", "--full-tree"}
	if recursive {
		args = append(args, "-r", "-t")
	}
	out, err := r.read(append(args, treeish, "--")...)
	if err != nil {
		return nil, err
	}
	var entries []treeEntry
	for rec := range bytes.SplitSeq(out, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		if !ok {
			return nil, fmt.Errorf("ls-tree: bad record %q", rec)
		}
		f := strings.Fields(string(meta))
		if len(f) != 4 {
			return nil, fmt.Errorf("ls-tree: bad record %q", rec)
		}
		e := treeEntry{Mode: f[0], Type: f[1], SHA: f[2], Path: string(path), Size: -1}
		if f[3] != "-" {
			if _, err := fmt.Sscan(f[3], &e.Size); err != nil {
				return nil, fmt.Errorf("ls-tree: bad size %q", f[3])
			}
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// resolve turns a ref or sha into an object id of the given kind ("commit",
// "tree"); ok is false when it does not exist.
func (r *Repo) resolve(ref, kind string) (string, bool) {
	if ref == "" || strings.HasPrefix(ref, "-") || strings.ContainsAny(ref, "\x00\n") {
		return "", false
	}
	if kind == "commit" {
		if sha, ok := r.branchFile(ref); ok {
			return sha, true
		}
	}
	out, err := r.read("rev-parse", "-q", "--verify", "--end-of-options", ref+"^{"+kind+"}")
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(out)), true
}

// branchName is a ref that can only name a branch's file: no revision
// syntax (^, ~, :, @{…}) and no dot-dot.
var branchName = regexp.MustCompile(`^[A-Za-z0-9_/-][A-Za-z0-9._/-]*$`)

// branchFile answers, from the ref files, the commit a branch name (main,
// heads/main, refs/heads/main) points at, as git rev-parse would: only
// when the name can mean nothing else (no file of the same name earlier in
// git's search order, no packed refs); ok is false when git must answer.
func (r *Repo) branchFile(ref string) (string, bool) {
	if !branchName.MatchString(ref) || strings.Contains(ref, "..") {
		return "", false
	}
	git := filepath.Join(r.dir, ".git")
	exists := func(p string) bool { _, err := os.Lstat(filepath.Join(git, filepath.FromSlash(p))); return err == nil }
	if exists("packed-refs") {
		return "", false
	}
	name := strings.TrimPrefix(strings.TrimPrefix(ref, "refs/"), "heads/")
	for _, shadow := range []string{ref, "refs/" + ref, "refs/tags/" + ref} { // rev-parse looks there first
		if shadow != "refs/heads/"+name && exists(shadow) {
			return "", false
		}
	}
	b, err := os.ReadFile(filepath.Join(git, "refs", "heads", filepath.FromSlash(name)))
	if sha := strings.TrimSpace(string(b)); err == nil && len(sha) == 40 && objectID.MatchString(sha) {
		return sha, true
	}
	return "", false
}

// ReadFile returns the exact content of path at commit.
func (r *Repo) ReadFile(commit, path string) string {
	r.t.Helper()
	out, err := r.read("cat-file", "blob", commit+":"+path)
	if err != nil {
		r.t.Fatalf("githubtest: %v", err)
	}
	return string(out)
}
