package scalebench

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/knue/syncjob/internal/github/githubtest"
)

// scaleRepo is a repository of n policies for the scale bench: base, then
// next, which edits five policies, adds one and deletes one.
type scaleRepo struct {
	repo       *githubtest.Repo
	n          int
	fileSize   int // 0: 2–12 KiB each (-scale.mib of them 1 MiB); else every file is this size
	base, next string
	edited     []string // paths next edits
	added      string   // the path next adds
	deleted    string   // the path next deletes
}

// Korean words the generated names and folders are made of.
var (
	scaleParts    = []string{"총칙", "학사", "교원인사", "직원인사", "연구", "입학", "학생생활", "재무회계", "시설안전", "부속기관", "산학협력", "대학원"}
	scaleChapters = []string{"일반", "조직", "운영", "위원회", "평가", "복무", "보수", "장학"}
	scaleTopics   = []string{"학칙", "시행세칙", "운영규정", "관리지침", "위원회 규정", "업무처리 요령", "심의 규정", "복무 규정", "지급 기준", "선발 지침"}
	scaleSentence = []string{
		"이 규정은 한국교원대학교의 %s에 관하여 필요한 사항을 정함을 목적으로 한다.",
		"총장은 제%d조에 따른 업무를 원활히 수행하기 위하여 필요한 조치를 할 수 있다.",
		"위원회는 위원장 1명을 포함한 %d명 이내의 위원으로 구성한다.",
		"이 규정에서 정하지 아니한 사항은 관계 법령과 학칙 제%d조를 따른다.",
		"각 호의 사항은 교무회의의 심의를 거쳐 총장이 따로 정한다. (개정 20%02d. 3. 1.)",
	}
)

// scalePath is where policy i lives: two to four folders deep, Korean names,
// unique base names (a shared one would be a conflict, which is not what
// the bench measures).
func scalePath(i int) string {
	part := scaleParts[i%len(scaleParts)]
	chapter := scaleChapters[(i/len(scaleParts))%len(scaleChapters)]
	topic := scaleTopics[i%len(scaleTopics)]
	dir := fmt.Sprintf("규정/제%d편 %s", i%len(scaleParts)+1, part)
	switch i % 3 {
	case 1:
		dir += fmt.Sprintf("/제%d장 %s", (i/len(scaleParts))%len(scaleChapters)+1, chapter)
	case 2:
		dir += fmt.Sprintf("/제%d장 %s/제%d절", (i/len(scaleParts))%len(scaleChapters)+1, chapter, i%5+1)
	}
	return fmt.Sprintf("%s/%s %s 제%05d호.md", dir, part, topic, i)
}

// scaleContent is the markdown of policy i at version v: a title heading
// (after YAML front matter in one file of five), then articles up to size
// bytes; size 0 draws 2–12 KiB from i.
func scaleContent(i, v, size int) []byte {
	rng := rand.New(rand.NewPCG(uint64(i), uint64(v)))
	if size == 0 {
		size = 2<<10 + rng.IntN(10<<10+1)
	}
	var b strings.Builder
	b.Grow(size + 256)
	if i%5 == 0 {
		fmt.Fprintf(&b, "---\nid: %d\n개정: %d\n---\n\n", i, v)
	}
	title := strings.TrimSuffix(scalePath(i)[strings.LastIndex(scalePath(i), "/")+1:], ".md")
	if v > 0 {
		title += fmt.Sprintf(" (개정 %d)", v)
	}
	fmt.Fprintf(&b, "# %s\n\n", title)
	body := b.Len()
	for art := 1; b.Len() < min(size, 16<<10); art++ {
		fmt.Fprintf(&b, "## 제%d조(%s)\n\n", art, scaleChapters[art%len(scaleChapters)])
		for s := 0; s < 3; s++ {
			fmt.Fprintf(&b, scaleSentence[(art+s)%len(scaleSentence)], art+s+i%97)
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	// A large file repeats its articles (formatting a megabyte costs more
	// than the program reading it).
	for articles := b.String()[body:]; b.Len() < size; {
		b.WriteString(articles)
	}
	out := []byte(b.String())
	if len(out) > size {
		out = out[:size]
		// cut at a rune boundary, as a real file ends, and pad to the size
		last := len(out) - 1
		for last > 0 && !utf8.RuneStart(out[last]) {
			last--
		}
		if !utf8.FullRune(out[last:]) {
			out = out[:last]
		}
		for len(out) < size {
			out = append(out, '\n')
		}
	}
	return out
}

// newScaleRepo builds the two commits with git fast-import (no work tree:
// 10,000 files of 1 MiB are 10 GiB that need never touch the disk
// uncompressed; no delta search and fast zlib, which would cost minutes
// there) and leaves the branch at base.
func newScaleRepo(tb testing.TB, n, fileSize int) *scaleRepo {
	tb.Helper()
	sr := &scaleRepo{repo: githubtest.NewRepo(tb), n: n, fileSize: fileSize}
	for k := range 5 {
		sr.edited = append(sr.edited, scalePath(n/7*k+1))
	}
	sr.added = scalePath(n)
	sr.deleted = scalePath(n - 2)

	cmd := exec.Command("git", "-c", "core.quotepath=false", "-c", "core.compression=1", "fast-import", "--quiet", "--big-file-threshold=1")
	cmd.Dir = sr.repo.Dir()
	cmd.Env = scaleGitEnv(tb)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		tb.Fatalf("git fast-import: %v", err)
	}
	w := bufio.NewWriterSize(stdin, 1<<20)
	file := func(path string, content []byte) {
		fmt.Fprintf(w, "M 100644 inline %s\ndata %d\n", path, len(content))
		w.Write(content)
		w.WriteString("\n")
	}
	commit := func(mark int, from int, msg string, at int64) {
		fmt.Fprintf(w, "commit refs/heads/main\nmark :%d\ncommitter bench <bench@example.invalid> %d +0000\ndata %d\n%s\n", mark, at, len(msg), msg)
		if from > 0 {
			fmt.Fprintf(w, "from :%d\n", from)
		}
	}
	commit(1, 0, "policies", 1704067200)
	size := func(i int) int { // -scale.mib of the files, spread evenly, are 1 MiB
		if k := *scaleMiB; fileSize == 0 && k > 0 && i%max(n/k, 1) == 0 && i/max(n/k, 1) < k {
			return 1 << 20
		}
		return fileSize
	}
	for i := range n {
		file(scalePath(i), scaleContent(i, 0, size(i)))
	}
	commit(2, 1, "five edits, an add, a delete", 1704067260)
	for k, p := range sr.edited {
		file(p, scaleContent(n/7*k+1, 1, size(n/7*k+1)))
	}
	file(sr.added, scaleContent(n, 0, size(n)))
	fmt.Fprintf(w, "D %s\n", sr.deleted)
	w.WriteString("done\n")
	if err := w.Flush(); err != nil {
		tb.Fatalf("git fast-import: %v: %s", err, stderr.String())
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		tb.Fatalf("git fast-import: %v: %s", err, stderr.String())
	}
	sr.next = sr.repo.Git("rev-parse", "refs/heads/main")
	sr.base = sr.repo.Git("rev-parse", "refs/heads/main~1")
	sr.at(sr.base)
	return sr
}

// at moves the branch to commit, as a push does; the work tree is not
// touched (the fake reads refs and objects only).
func (sr *scaleRepo) at(commit string) {
	sr.repo.Git("update-ref", "refs/heads/main", commit)
}

// scaleGitEnv isolates the bench's own git commands from the machine's
// configuration, as githubtest does for its own.
func scaleGitEnv(tb testing.TB) []string {
	home := tb.TempDir()
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull, "LC_ALL=C"}
	if p, ok := os.LookupEnv("PATH"); ok {
		env = append(env, "PATH="+p)
	}
	return env
}

// streamArchive writes the gzipped tarball of commit as GitHub's codeload
// does, as git produces it: streamed, so that neither the fake nor the test
// process holds a 10 GiB archive (the fake builds its archive whole).
func streamArchive(dir string, env []string, prefix, commit string, w io.Writer) error {
	cmd := exec.Command("git", "archive", "--format=tar", "--prefix="+prefix, commit)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout = w
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git archive: %w: %s", err, stderr.String())
	}
	return nil
}
