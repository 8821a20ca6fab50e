package syncer_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
)

// Histories for the soak test (soak_test.go): a seeded generator of
// commits on a real git repository, so blob shas, renames, merges and
// force-pushes are git's own.

// soakMaxFileSize is the size limit the soak runs with: small, so an
// oversized file is cheap to make.
const soakMaxFileSize = 2048

// histStep is one step of a generated history: what it did and the head
// the branch points at after it.
type histStep struct {
	N    int
	Desc string
	Head string
}

// historian makes a seeded random history on the repository's main branch.
// It mirrors the work tree in files so that choosing what to change needs
// no git call.
type historian struct {
	t      testing.TB
	repo   *githubtest.Repo
	rng    *rand.Rand
	files  map[string]string            // main's work tree: path → content
	snaps  map[string]map[string]string // commit → its files, to force-push back to
	chain  []string                     // main's first-parent line, oldest first
	serial int
}

func newHistorian(t testing.TB, repo *githubtest.Repo, seed uint64) *historian {
	return &historian{t: t, repo: repo, rng: rand.New(rand.NewPCG(seed, 0x5eed)),
		files: map[string]string{}, snaps: map[string]map[string]string{}}
}

var (
	soakFolders = []string{"규정", "규정/학사", "규정/학사/세칙", "지침", "지침/연구 윤리", "학칙", "부속 기관/도서관", "2024 개정", "위원회 규정"}
	soakNames   = []string{"학칙", "교원 인사 규정", "학생 상벌 규정", "장학금 지급 규정", "연구윤리 지침", "도서관 운영 규정",
		"기숙사 생활 세칙", "교육과정 운영 지침", "입학전형 시행 세칙", "등록금 반환 규정", "제1\u20242조 시행 규칙", "위원회 (운영) 규정", "규정:부칙"}
	soakTitles = []string{"한국교원대학교 학칙", "교원 인사에 관한 규정", "학생 상벌 규정", "장학금 지급 규정", "연구윤리 지침", "R&D <운영> 규정"}
)

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

func (h *historian) next() int { h.serial++; return h.serial }

// content is a policy file's text: unique (so each write is a new blob),
// with its title written in one of the ways a title parser must see through.
func (h *historian) content() string {
	title := fmt.Sprintf("%s %d", pick(h.rng, soakTitles), h.next())
	body := fmt.Sprintf("제1조 본문 %d.\n", h.rng.IntN(1_000_000))
	switch h.rng.IntN(8) {
	case 0:
		return body // no heading: the title is the policy name
	case 1:
		return "\uFEFF# " + title + "\r\n\r\n" + strings.ReplaceAll(body, "\n", "\r\n")
	case 2:
		return "---\ntitle: 머리말\n---\n# " + title + "\n" + body
	case 3:
		return "```\n# 코드 속 제목\n```\n# " + title + "\n" + body
	}
	return "# " + title + "\n\n" + body
}

func (h *historian) newPath() string {
	return fmt.Sprintf("%s/%s %d.md", pick(h.rng, soakFolders), pick(h.rng, soakNames), h.next())
}

// policyPaths are the policy files of the work tree, sorted.
func (h *historian) policyPaths() []string {
	var out []string
	for p := range h.files {
		if policy.IsPolicyPath(p) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// folders are the folders holding at least one file, sorted.
func (h *historian) folders() []string {
	set := map[string]bool{}
	for p := range h.files {
		if d := path.Dir(p); d != "." && !strings.HasPrefix(d, ".") {
			set[d] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

func (h *historian) write(p, content string) {
	h.repo.Write(p, content)
	h.files[p] = content
}

func (h *historian) remove(p string) {
	h.repo.Remove(p)
	for f := range h.files {
		if f == p || strings.HasPrefix(f, p+"/") {
			delete(h.files, f)
		}
	}
}

func (h *historian) move(from, to string) {
	h.repo.Move(from, to)
	moved := map[string]string{}
	for f, c := range h.files {
		switch {
		case f == from:
			moved[to] = c
		case strings.HasPrefix(f, from+"/"):
			moved[to+strings.TrimPrefix(f, from)] = c
		default:
			continue
		}
		delete(h.files, f)
	}
	maps.Copy(h.files, moved)
}

// commit commits the work tree on main and remembers its files.
func (h *historian) commit(msg string) string {
	sha := h.repo.Commit(msg)
	h.remember(sha)
	return sha
}

func (h *historian) remember(sha string) {
	h.snaps[sha] = maps.Clone(h.files)
	h.chain = append(h.chain, sha)
	// keep every head reachable after force-pushes
	h.repo.Git("update-ref", "refs/soak/"+sha, sha)
}

// generate makes n steps: the first adds a dozen files (a first run reads
// them from the archive), each other changes something.
func (h *historian) generate(n int) []histStep {
	var steps []histStep
	for i := 1; i <= n; i++ {
		var desc string
		if i == 1 {
			desc = h.seed()
		} else {
			desc = h.step()
		}
		steps = append(steps, histStep{N: i, Desc: desc, Head: h.chain[len(h.chain)-1]})
	}
	return steps
}

func (h *historian) seed() string {
	for range 12 {
		h.write(h.newPath(), h.content())
	}
	h.write("README.md", "# 규정 모음\n")
	h.write(".github/pull_request_template.md", "# PR\n")
	h.write("규정/README.md", "# 안내\n")
	h.commit("seed")
	return "seed: 12 policies, README.md, .github/pull_request_template.md"
}

// op is one change of the work tree; it returns what it did, or "" when it
// could not apply (nothing to edit...).
type op func() string

// step makes one history step: a commit of one or two changes, a merge, a
// force-push, or no commit at all.
func (h *historian) step() string {
	x := h.rng.Float64()
	switch {
	case x < 0.06:
		return "merge: " + h.merge()
	case x < 0.11:
		return "force-push: " + h.forcePush()
	case x < 0.14:
		return "no new commit"
	case x < 0.19:
		if d := h.revert(); d != "" {
			return d
		}
	case x < 0.24:
		if d := h.chmod(); d != "" {
			h.commit("mode only: " + d)
			return "mode only: " + d
		}
	}
	var did []string
	for range 1 + h.rng.IntN(2) {
		if d := h.change(); d != "" {
			did = append(did, d)
		}
	}
	if len(did) == 0 {
		did = append(did, h.add())
	}
	h.commit(strings.Join(did, "; "))
	return strings.Join(did, "; ")
}

// change applies one weighted random change to the work tree.
func (h *historian) change() string {
	ops := []struct {
		w  int
		op op
	}{
		{22, h.add},
		{20, h.edit},
		{8, func() string { return h.rename(false) }},
		{5, func() string { return h.rename(true) }},
		{8, h.moveFile},
		{4, h.moveFolder},
		{8, h.deleteFile},
		{3, h.deleteFolder},
		{5, h.emptyOrOversized},
		{5, h.duplicateName},
		{3, h.nonPolicy},
		{2, h.nfdName},
		{4, h.chmod},
	}
	total := 0
	for _, o := range ops {
		total += o.w
	}
	x := h.rng.IntN(total)
	for _, o := range ops {
		if x < o.w {
			return o.op()
		}
		x -= o.w
	}
	return ""
}

// chmod flips a policy file's executable bit: a change of mode only,
// which GitHub's compare lists as modified with a null sha.
func (h *historian) chmod() string {
	ps := h.policyPaths()
	if len(ps) == 0 {
		return ""
	}
	p := pick(h.rng, ps)
	fi, err := os.Stat(filepath.Join(h.repo.Dir(), filepath.FromSlash(p)))
	if err != nil {
		h.t.Fatalf("soak: chmod %s: %v", p, err)
	}
	exec := fi.Mode()&0o111 == 0
	h.repo.Chmod(p, exec)
	if exec {
		return "chmod +x " + p
	}
	return "chmod -x " + p
}

func (h *historian) add() string {
	p := h.newPath()
	h.write(p, h.content())
	return "add " + p
}

func (h *historian) edit() string {
	ps := h.policyPaths()
	if len(ps) == 0 {
		return ""
	}
	p := pick(h.rng, ps)
	h.write(p, h.content())
	return "edit " + p
}

func (h *historian) rename(withEdit bool) string {
	ps := h.policyPaths()
	if len(ps) == 0 {
		return ""
	}
	from := pick(h.rng, ps)
	to := fmt.Sprintf("%s/%s %d.md", path.Dir(from), pick(h.rng, soakNames), h.next())
	h.move(from, to)
	if withEdit {
		h.write(to, h.files[to]+"\n개정 "+fmt.Sprint(h.next())+"\n")
		return "rename+edit " + from + " -> " + to
	}
	return "rename " + from + " -> " + to
}

func (h *historian) moveFile() string {
	ps := h.policyPaths()
	if len(ps) == 0 {
		return ""
	}
	from := pick(h.rng, ps)
	to := pick(h.rng, soakFolders) + fmt.Sprintf("/이동 %d/", h.next()) + path.Base(from)
	h.move(from, to)
	return "move " + from + " -> " + to
}

func (h *historian) moveFolder() string {
	fs := h.folders()
	if len(fs) == 0 {
		return ""
	}
	from := pick(h.rng, fs)
	to := fmt.Sprintf("%s/옮긴 폴더 %d", pick(h.rng, soakFolders), h.next())
	if strings.HasPrefix(to, from+"/") {
		to = fmt.Sprintf("옮긴 폴더 %d", h.next())
	}
	h.move(from, to)
	return "move folder " + from + " -> " + to
}

func (h *historian) deleteFile() string {
	ps := h.policyPaths()
	if len(ps) < 3 {
		return ""
	}
	p := pick(h.rng, ps)
	h.remove(p)
	return "delete " + p
}

// deleteFolder deletes a folder of at most four files, so the mass-delete
// guard (more than 10 policies) stays out of the way.
func (h *historian) deleteFolder() string {
	var small []string
	for _, d := range h.folders() {
		n := 0
		for f := range h.files {
			if strings.HasPrefix(f, d+"/") {
				n++
			}
		}
		if n <= 4 {
			small = append(small, d)
		}
	}
	if len(small) == 0 || len(h.policyPaths()) < 8 {
		return ""
	}
	d := pick(h.rng, small)
	h.remove(d)
	return "delete folder " + d
}

func (h *historian) emptyOrOversized() string {
	var p string
	if ps := h.policyPaths(); len(ps) > 0 && h.rng.IntN(2) == 0 {
		p = pick(h.rng, ps)
	} else {
		p = h.newPath()
	}
	if h.rng.IntN(2) == 0 {
		h.write(p, "")
		return "empty " + p
	}
	h.write(p, "# 큰 규정\n"+strings.Repeat(fmt.Sprintf("가나다라마바사 %d ", h.next()), soakMaxFileSize/10))
	return "oversized " + p
}

// duplicateName adds a file named like an existing one in another folder,
// sorting before or after it (so it wins, or loses, the name).
func (h *historian) duplicateName() string {
	ps := h.policyPaths()
	if len(ps) == 0 {
		return ""
	}
	orig := pick(h.rng, ps)
	folder := "0 앞선 폴더"
	if h.rng.IntN(2) == 0 {
		folder = "힣 뒤 폴더"
	}
	p := folder + "/" + path.Base(orig)
	if p == orig {
		return ""
	}
	c := h.content()
	if h.rng.IntN(3) == 0 {
		c = h.files[orig] // the same blob
	}
	h.write(p, c)
	return "duplicate name " + p + " (of " + orig + ")"
}

func (h *historian) nonPolicy() string {
	p := pick(h.rng, []string{"README.md", "규정/README.md", ".github/ISSUE_TEMPLATE/bug.md", "규정/.숨김/초안.md", "notes.txt", "지침/readme.MD"})
	h.write(p, fmt.Sprintf("# 정책 아님 %d\n", h.next()))
	return "non-policy " + p
}

func (h *historian) nfdName() string {
	p := norm.NFD.String(fmt.Sprintf("%s/한글 자모 규정 %d.md", pick(h.rng, soakFolders), h.next()))
	h.write(p, h.content())
	return "add (NFD name) " + norm.NFC.String(p)
}

// merge commits on a side branch (adds, edits and renames), adds a file on
// main meanwhile, and merges the side branch with a merge commit. Main only
// adds new paths, so the merge never conflicts.
func (h *historian) merge() string {
	side := fmt.Sprintf("side-%d", h.next())
	base := maps.Clone(h.files)
	h.repo.Branch(side)
	h.repo.Checkout(side)
	var did []string
	for range 1 + h.rng.IntN(3) {
		var d string
		switch h.rng.IntN(3) {
		case 0:
			d = h.add()
		case 1:
			d = h.edit()
		default:
			d = h.rename(h.rng.IntN(2) == 0)
		}
		if d != "" {
			did = append(did, d)
		}
	}
	h.repo.Commit("side: " + strings.Join(did, "; "))
	sideFiles := h.files
	h.repo.Checkout("main")
	h.files = base
	p := h.newPath()
	c := h.content()
	h.write(p, c)
	h.commit("main meanwhile: add " + p)
	h.repo.Merge(side)
	h.files = sideFiles
	h.files[p] = c
	h.remember(h.repo.Head("main"))
	return fmt.Sprintf("%s [%s] with main's add %s", side, strings.Join(did, "; "), p)
}

// forcePush resets main one to three commits back and commits anew, as a
// force-push does to the remote branch.
func (h *historian) forcePush() string {
	k := 1 + h.rng.IntN(3)
	if k >= len(h.chain) {
		k = len(h.chain) - 1
	}
	if k < 1 {
		d := h.add()
		h.commit("nothing to reset: " + d) // uncommitted, the add went into the next commit made, on any branch
		return "nothing to reset; " + d
	}
	target := h.chain[len(h.chain)-1-k]
	h.repo.Reset(target)
	h.files = maps.Clone(h.snaps[target])
	h.chain = h.chain[:len(h.chain)-k]
	var did []string
	for range 1 + h.rng.IntN(2) {
		d := h.change()
		if d == "" {
			d = h.add()
		}
		did = append(did, d)
		h.commit("after force-push: " + d)
	}
	return fmt.Sprintf("reset %d back to %s, then %s", k, target[:7], strings.Join(did, "; "))
}

// revert reverts main's last commit (its first parent's tree comes back),
// as "git revert" on a mistaken push does.
func (h *historian) revert() string {
	if len(h.chain) < 2 {
		return ""
	}
	last, parent := h.chain[len(h.chain)-1], h.chain[len(h.chain)-2]
	if h.repo.Git("rev-parse", last+"^{tree}") == h.repo.Git("rev-parse", parent+"^{tree}") {
		return "" // nothing to revert: git's revert of an empty change fails
	}
	args := []string{"revert", "--no-edit"}
	if strings.Contains(h.repo.Git("rev-list", "--parents", "-n", "1", last), " "+parent+" ") {
		args = append(args, "-m", "1") // a merge: back to its first parent
	}
	h.repo.Git(append(args, last)...)
	h.files = maps.Clone(h.snaps[parent])
	h.remember(h.repo.Head("main"))
	return "revert " + last[:7]
}

// pointMain moves main to a step's head, as a push (or force-push) does.
func pointMain(repo *githubtest.Repo, head string) {
	repo.Git("update-ref", "refs/heads/main", head)
}
