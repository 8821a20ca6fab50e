package githubtest

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
}

// NewRepo initialises an empty repository whose current branch is "main".
func NewRepo(t testing.TB) *Repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("githubtest: git not found: %v", err)
	}
	r := &Repo{t: t, dir: filepath.Join(t.TempDir(), "repo"), home: t.TempDir()}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		t.Fatalf("githubtest: %v", err)
	}
	r.Git("init", "-q", "-b", "main")
	return r
}

// Dir is the work tree.
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

// Git runs any git command in the repository and returns its trimmed stdout.
func (r *Repo) Git(args ...string) string {
	r.t.Helper()
	out, err := r.git(nil, args...)
	if err != nil {
		r.t.Fatalf("githubtest: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func (r *Repo) abs(path string) string {
	r.t.Helper()
	if path == "" || filepath.IsAbs(path) || strings.HasPrefix(filepath.Clean(path), "..") {
		r.t.Fatalf("githubtest: path %q must be relative to the repository", path)
	}
	return filepath.Join(r.dir, filepath.FromSlash(path))
}

// Write creates or replaces a file, creating its folders. Path bytes are kept
// as given (NFD stays NFD).
func (r *Repo) Write(path, content string) {
	r.t.Helper()
	p := r.abs(path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatalf("githubtest: write %s: %v", path, err)
	}
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

// Commit stages everything (git add -A) and commits, allowing empty commits.
// It returns the new commit sha.
func (r *Repo) Commit(msg string) string {
	r.t.Helper()
	r.Git("add", "-A")
	r.tick()
	r.Git("commit", "-q", "--allow-empty", "--no-verify", "-m", msg)
	return r.Git("rev-parse", "HEAD")
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
	return r.Git("rev-parse", "HEAD")
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
	out, err := r.git(nil, append(args, treeish, "--")...)
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
	out, err := r.git(nil, "rev-parse", "-q", "--verify", "--end-of-options", ref+"^{"+kind+"}")
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(out)), true
}

// ReadFile returns the exact content of path at commit.
func (r *Repo) ReadFile(commit, path string) string {
	r.t.Helper()
	out, err := r.git(nil, "cat-file", "blob", commit+":"+path)
	if err != nil {
		r.t.Fatalf("githubtest: %v", err)
	}
	return string(out)
}
