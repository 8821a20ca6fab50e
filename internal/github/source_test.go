package github_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/github"
	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
)

const (
	owner = "knue"
	name  = "policies"
)

var testNow = time.Date(2025, 3, 1, 16, 0, 0, 0, time.UTC)

// sleeps records the backoff waits instead of sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return nil
}

func (s *sleeps) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

type fixture struct {
	repo   *githubtest.Repo
	srv    *githubtest.Server
	sleeps *sleeps
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	repo := githubtest.NewRepo(t)
	return &fixture{repo: repo, srv: githubtest.NewServer(t, owner, name, repo), sleeps: &sleeps{}}
}

func (f *fixture) config() github.Config {
	return github.Config{
		Owner:   owner,
		Repo:    name,
		Branch:  "main",
		BaseURL: f.srv.URL(),
		Sleep:   f.sleeps.sleep,
		Now:     func() time.Time { return testNow },
	}
}

func mustSource(t *testing.T, cfg github.Config) *github.Source {
	t.Helper()
	s, err := github.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func (f *fixture) source(t *testing.T) *github.Source {
	t.Helper()
	return mustSource(t, f.config())
}

func wantRequests(t *testing.T, src *github.Source, srv *githubtest.Server, want int) {
	t.Helper()
	if got := src.Requests(); got != int64(want) {
		t.Errorf("Source.Requests() = %d, want %d", got, want)
	}
	if got := srv.Requests().Total(); got != want {
		t.Errorf("server saw %d requests (%v), want %d", got, srv.Requests(), want)
	}
}

func TestNew_BadConfig_ErrConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []github.Config{
		{Repo: "r"},
		{Owner: "o"},
		{Owner: "o", Repo: "a/b"},
		{Owner: "o", Repo: "r", BaseURL: "ftp://x/"},
	} {
		if _, err := github.New(cfg); !errors.Is(err, policy.ErrConfig) {
			t.Errorf("New(%+v) = %v, want ErrConfig", cfg, err)
		}
	}
}

func TestHead_OneRequest(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Write("a.md", "# A\n")
	want := f.repo.Commit("first")
	src := f.source(t)

	got, err := src.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Head = %s, want %s", got, want)
	}
	wantRequests(t, src, f.srv, 1)
	if n := f.srv.Requests()[githubtest.KindCommitSHA]; n != 1 {
		t.Errorf("commit-sha requests = %d, want 1", n)
	}
}

func TestHead_UnknownRepoOrBranch_ErrConfigNotRetried(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Commit("first")
	for _, tc := range []struct{ repo, branch string }{
		{"missing", "main"},
		{name, "no-such-branch"},
	} {
		f.srv.ResetRequests()
		cfg := f.config()
		cfg.Repo, cfg.Branch = tc.repo, tc.branch
		src := mustSource(t, cfg)
		_, err := src.Head(context.Background())
		if !errors.Is(err, policy.ErrConfig) {
			t.Fatalf("Head(%s@%s) = %v, want ErrConfig", tc.repo, tc.branch, err)
		}
		if !strings.Contains(err.Error(), owner+"/"+tc.repo) || !strings.Contains(err.Error(), tc.branch) {
			t.Errorf("error %q does not name the repository and branch", err)
		}
		wantRequests(t, src, f.srv, 1)
	}
	if got := f.sleeps.got(); len(got) != 0 {
		t.Errorf("slept %v, want no retry", got)
	}
}

func TestHead_BadToken_ErrConfigTokenHidden(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Commit("first")
	f.srv.Token = "right-token"
	cfg := f.config()
	cfg.Token = "ghp_wrongTOKEN1234567890"
	src := mustSource(t, cfg)

	_, err := src.Head(context.Background())
	if !errors.Is(err, policy.ErrConfig) {
		t.Fatalf("Head = %v, want ErrConfig", err)
	}
	if strings.Contains(err.Error(), cfg.Token) {
		t.Errorf("error %q shows the token", err)
	}

	cfg.Token = "right-token"
	if _, err := mustSource(t, cfg).Head(context.Background()); err != nil {
		t.Fatalf("Head with the right token: %v", err)
	}
	log := f.srv.Log()
	if got := log[len(log)-1].Header.Get("Authorization"); got != "Bearer right-token" {
		t.Errorf("Authorization = %q", got)
	}
}

func TestTokenNeverInErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Write("a.md", "a")
	head := f.repo.Commit("first")
	f.srv.Token = "tok_abcdef123456"
	cfg := f.config()
	cfg.Token = f.srv.Token
	cfg.Backoff = []time.Duration{}
	src := mustSource(t, cfg)
	ctx := context.Background()

	f.srv.FailNext(githubtest.AnyKind, -1, githubtest.StatusError(http.StatusBadGateway, "echo "+cfg.Token))
	var errs []error
	_, err := src.Head(ctx)
	errs = append(errs, err)
	_, err = src.Tree(ctx, head)
	errs = append(errs, err)
	_, err = src.Compare(ctx, head, head)
	errs = append(errs, err)
	_, failed, err := src.Contents(ctx, head, []policy.File{{Path: "a.md", SHA: f.repo.BlobSHA(head, "a.md")}})
	if err != nil {
		t.Fatalf("Contents: a 502 on one blob is a per-file failure, got run error %v", err)
	}
	errs = append(errs, failed["a.md"])
	for i, err := range errs {
		if err == nil {
			t.Fatalf("call %d: no error", i)
		}
		if strings.Contains(err.Error(), cfg.Token) {
			t.Errorf("call %d: error %q shows the token", i, err)
		}
	}
}

func filesOf(t *testing.T, repo *githubtest.Repo, commit string) []policy.File {
	t.Helper()
	var files []policy.File
	for p, sha := range repo.Files(commit) {
		content := repo.Git("cat-file", "-s", sha)
		var size int64
		fmt.Sscan(content, &size)
		files = append(files, policy.File{Path: p, SHA: sha, Size: size})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files
}

// odd names a real regulations repository holds.
var oddNames = []string{
	"학칙.md",
	"README.md",
	"규정/교무/학사 운영 규정 (개정).md",
	"규정/교무/세부/시행세칙 제1조․제2조.md",
	"규정/교무/세부/더 깊은 폴더/마지막 규정.md",
	"규정/행정/직제 규정.md",
	"규정/행정/위원회/(폐지) 위원회 규정.md",
	"지침/연구 윤리 지침.md",
	"지침/a b/c (d).md",
	".github/pull_request_template.md",
	"docs/notes.txt",
	"\u1112\u1161\u11a8\u110e\u1175\u11a8 NFD.md",
}

func writeOdd(repo *githubtest.Repo) {
	for i, p := range oddNames {
		repo.Write(p, fmt.Sprintf("# 제목 %d\n\n본문 %s\n", i, p))
	}
}

func TestTree_Complete(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	writeOdd(f.repo)
	head := f.repo.Commit("odd names")
	src := f.source(t)

	got, err := src.Tree(context.Background(), head)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(filesOf(t, f.repo, head), got); diff != "" {
		t.Errorf("Tree (-want +got):\n%s", diff)
	}
	wantRequests(t, src, f.srv, 1)
}

func TestTree_TruncatedIsWalked_EqualsUntruncated(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	writeOdd(f.repo)
	for i := range 5 {
		f.repo.Write(fmt.Sprintf("규정/묶음 %d/항목 (%d)/규정 %d.md", i, i, i), "x")
	}
	head := f.repo.Commit("many")
	want, err := f.source(t).Tree(context.Background(), head)
	if err != nil {
		t.Fatal(err)
	}

	for _, n := range []int{1, 3, 10} {
		t.Run(fmt.Sprint("over ", n), func(t *testing.T) {
			f.srv.TruncateTreesOver = n
			f.srv.ResetRequests()
			src := f.source(t)
			got, err := src.Tree(context.Background(), head)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Tree (-want +got):\n%s", diff)
			}
			if f.srv.Requests()[githubtest.KindTree] < 3 {
				t.Errorf("tree requests = %d, want the folders walked", f.srv.Requests()[githubtest.KindTree])
			}
		})
	}
}

// A repository of one top folder too big for one listing is walked from
// that folder's own level: its recursive listing, which would be cut too,
// is not asked for. Six sub-folders of three files each, listings cut
// over 8 entries: the root's listing and level, the top folder's level and
// each sub-folder's listing.
func TestTree_SoleTopFolder_WalkedWithoutItsCutListing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for i := range 6 {
		for j := range 3 {
			f.repo.Write(fmt.Sprintf("규정/제%d편/규정 %d-%d.md", i, i, j), "x")
		}
	}
	head := f.repo.Commit("one top folder")
	if n := walkedAsWhole(t, f, head, 18, 8); n != 1+1+1+6 {
		t.Errorf("tree requests = %d, want 9: the root's listing and level, 규정's level, each 편's listing", n)
	}
}

// A walk lists a folder's sub-folders at once, not one after another:
// each recursive listing of a sub-folder is held until another is in
// flight beside it (a walk one at a time would hold the first for good,
// and fail after its wait).
func TestTree_Walk_SubFoldersListedAtOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for i := range 4 {
		f.repo.Write(fmt.Sprintf("편 %d/규정 %d.md", i, i), "x")
		f.repo.Write(fmt.Sprintf("편 %d/규정 %d 부칙.md", i, i), "x")
	}
	head := f.repo.Commit("four folders")
	f.srv.TruncateTreesOver = 4
	var inFlight atomic.Int32
	together := make(chan struct{})
	var once sync.Once
	cfg := f.config()
	cfg.HTTPClient = &http.Client{Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
		sub := strings.Contains(req.URL.Path, "/git/trees/") && req.URL.Query().Has("recursive") && !strings.HasSuffix(req.URL.Path, "/"+head)
		if sub {
			if inFlight.Add(1) >= 2 {
				once.Do(func() { close(together) })
			}
			defer inFlight.Add(-1)
			select {
			case <-together:
			case <-time.After(5 * time.Second):
				return nil, errors.New("no other sub-folder listing in flight for 5 s")
			}
		}
		return http.DefaultTransport.RoundTrip(req)
	})}
	got, err := mustSource(t, cfg).Tree(context.Background(), head)
	if err != nil || len(got) != 8 {
		t.Fatalf("Tree: %d files, %v; want 8 with the sub-folders listed at once", len(got), err)
	}
}

// A sole sub-folder is walked at once only when the cut listing ended in
// it: here the root's own files filled the cut listing, and the small
// folder beside them is listed whole, as before (root listing and level,
// z's listing: 3, not 8).
func TestTree_SoleFolderBesideTheFilesThatFilledTheListing_ListedWhole(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for i := range 12 {
		f.repo.Write(fmt.Sprintf("a-%02d.md", i), "x")
	}
	for i := range 5 {
		f.repo.Write(fmt.Sprintf("z/%d/규정 %d.md", i, i), "x")
	}
	head := f.repo.Commit("files beside one folder")
	if n := walkedAsWhole(t, f, head, 17, 11); n != 3 {
		t.Errorf("tree requests = %d, want 3: the root's listing and level, z's listing", n)
	}
}

// However deep the cut folders, a walk has at most 8 listings in flight
// (walkAtOnce), not 8 a level: eight folders of eight, each cut.
func TestTree_Walk_EightListingsInFlightAtMost(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for i := range 8 {
		for j := range 8 {
			f.repo.Write(fmt.Sprintf("편 %d/장 %d/규정 %d-%d.md", i, j, i, j), "x")
			f.repo.Write(fmt.Sprintf("편 %d/장 %d/부칙 %d-%d.md", i, j, i, j), "x")
		}
	}
	head := f.repo.Commit("eight by eight")
	f.srv.TruncateTreesOver = 10
	var inFlight, peak atomic.Int32
	cfg := f.config()
	cfg.HTTPClient = &http.Client{Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if strings.Contains(req.URL.Path, "/git/trees/") {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(5 * time.Millisecond) // long enough for the others to pile up
		}
		return http.DefaultTransport.RoundTrip(req)
	})}
	got, err := mustSource(t, cfg).Tree(context.Background(), head)
	if err != nil || len(got) != 128 {
		t.Fatalf("Tree: %d files, %v; want 128", len(got), err)
	}
	if p := peak.Load(); p > 8 || p < 2 {
		t.Errorf("at most %d tree listings in flight, want 2 to 8", p)
	}
}

// walkedAsWhole lists head's tree whole (files of it), then with listings
// cut over cut entries, checks both give the same files, and returns how
// many tree requests the cut one made.
func walkedAsWhole(t *testing.T, f *fixture, head string, files, cut int) int {
	t.Helper()
	want, err := f.source(t).Tree(context.Background(), head)
	if err != nil || len(want) != files {
		t.Fatalf("untruncated: %d files, %v; want %d", len(want), err, files)
	}
	f.srv.TruncateTreesOver = cut
	f.srv.ResetRequests()
	got, err := f.source(t).Tree(context.Background(), head)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Tree cut over %d (-want +got):\n%s", cut, diff)
	}
	return f.srv.Requests()[githubtest.KindTree]
}

func TestTree_SymlinkAndSubmoduleExcluded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Write("규정/a.md", "a")
	f.repo.Write("run.sh", "#!/bin/sh\n")
	f.repo.Git("update-index", "--add", "--chmod=+x", "run.sh")
	f.repo.Symlink("link.md", "규정/a.md")
	first := f.repo.Commit("first")
	f.repo.Submodule("vendor/sub.md", first)
	head := f.repo.Commit("submodule")

	got, err := f.source(t).Tree(context.Background(), head)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, file := range got {
		paths = append(paths, file.Path)
	}
	if diff := cmp.Diff([]string{"run.sh", "규정/a.md"}, paths); diff != "" {
		t.Errorf("Tree paths (-want +got):\n%s", diff)
	}
}

func TestTree_UnknownCommit_ErrNotFoundNotRetried(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Commit("first")
	src := f.source(t)
	_, err := src.Tree(context.Background(), "0123456789abcdef0123456789abcdef01234567")
	if !errors.Is(err, policy.ErrNotFound) {
		t.Fatalf("Tree = %v, want ErrNotFound", err)
	}
	wantRequests(t, src, f.srv, 1)
}

// TreeKeeping keeps only the files keep takes, whole listing or walked,
// and counts every policy file of the tree, kept or not (a first sync in
// windows holds one window's files; internal/syncer).
func TestTreeKeeping_KeepsWhatKeepTakes_CountsEveryPolicy(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for i := range 12 {
		f.repo.Write(fmt.Sprintf("규정/묶음 %d/규정 %d.md", i%3, i), "x")
	}
	f.repo.Write("README.md", "not a policy")
	head := f.repo.Commit("twelve policies")
	all, err := f.source(t).Tree(context.Background(), head)
	if err != nil {
		t.Fatal(err)
	}
	odd := func(path string) bool { return strings.HasSuffix(path, "1.md") || strings.HasSuffix(path, "3.md") }
	var want []policy.File
	for _, file := range all {
		if odd(file.Path) {
			want = append(want, file)
		}
	}
	for _, over := range []int{0, 4} {
		t.Run(fmt.Sprint("listings cut over ", over), func(t *testing.T) {
			f.srv.TruncateTreesOver = over
			got, policies, err := f.source(t).TreeKeeping(context.Background(), head, odd)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" || policies != 12 {
				t.Errorf("%d policies, want 12; files (-want +got):\n%s", policies, diff)
			}
		})
	}
}
