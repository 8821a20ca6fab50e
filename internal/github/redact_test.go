package github_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/github"
	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
)

// Credentials written into GITHUB_API_URL, as a GitHub Enterprise proxy may
// want them.
const (
	urlUser     = "alice-url-user"
	urlPassword = "s3cr3t-url-pw"
)

// withCredentials writes the user and password into an http(s) URL.
func withCredentials(raw string) string {
	scheme, rest, _ := strings.Cut(raw, "://")
	return scheme + "://" + urlUser + ":" + urlPassword + "@" + rest
}

// lockedBuffer collects log lines from concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// wantNoCredentials fails the test when any text shows the URL's user or password.
func wantNoCredentials(t *testing.T, texts map[string]string) {
	t.Helper()
	for where, text := range texts {
		if strings.Contains(text, urlPassword) || strings.Contains(text, urlUser) {
			t.Errorf("%s shows the URL's credentials: %q", where, text)
		}
	}
}

// allCalls runs every Source call and returns their error texts by name.
func allCalls(ctx context.Context, src *github.Source, commit string, files []policy.File) map[string]string {
	texts := map[string]string{}
	note := func(name string, err error) {
		if err != nil {
			texts[name] = err.Error()
		}
	}
	_, err := src.Head(ctx)
	note("Head", err)
	_, err = src.Tree(ctx, commit)
	note("Tree", err)
	_, err = src.Compare(ctx, commit, commit)
	note("Compare", err)
	_, failed, err := src.Titles(ctx, commit, files, policy.DefaultMaxFileSize)
	note("Titles", err)
	for p, ferr := range failed {
		note("Titles "+p, ferr)
	}
	return texts
}

func TestURLCredentials_TransportFails_NeverInErrorsOrLogs(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	// A transport that fails every request and echoes its URL, as some do.
	failing := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return nil, fmt.Errorf("dial %s: connection refused", r.URL)
	})
	src := mustSource(t, github.Config{
		Owner: owner, Repo: name,
		BaseURL:    withCredentials("https://github.example.invalid/api/v3/"),
		HTTPClient: &http.Client{Transport: failing},
		Sleep:      func(context.Context, time.Duration) error { return nil },
		Logger:     slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	sha := strings.Repeat("a", 40)
	var files []policy.File
	for i := range 12 { // over the archive threshold: the archive is tried too
		files = append(files, policy.File{Path: fmt.Sprintf("규정/%02d.md", i), SHA: sha, Size: -1})
	}
	texts := allCalls(context.Background(), src, sha, files)
	for _, name := range []string{"Head", "Tree", "Compare", "Titles " + files[0].Path} {
		if texts[name] == "" {
			t.Errorf("%s: no error from a transport that fails", name)
		}
	}
	texts["logs"] = logs.String()
	if !strings.Contains(logs.String(), "retrying request") {
		t.Errorf("logs do not show the retries:\n%s", logs.String())
	}
	wantNoCredentials(t, texts)
}

func TestURLCredentials_ErrorAnswers_NeverInErrorsOrLogs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.repo.Write("a.md", "# a\n")
	head := f.repo.Commit("first")
	var logs lockedBuffer
	cfg := f.config()
	cfg.BaseURL = withCredentials(f.srv.URL())
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	src := mustSource(t, cfg)
	files := []policy.File{{Path: "a.md", SHA: f.repo.BlobSHA(head, "a.md"), Size: -1}}

	// go-github's ErrorResponse prints the request URL, user info included.
	for _, fault := range []githubtest.Fault{
		githubtest.StatusError(http.StatusForbidden, "Resource not accessible"),
		githubtest.StatusError(http.StatusNotFound, "Not Found"),
		githubtest.ServerError(http.StatusBadGateway),
	} {
		f.srv.ClearFaults()
		f.srv.FailNext(githubtest.AnyKind, -1, fault)
		texts := allCalls(context.Background(), src, head, files)
		texts["logs"] = logs.String()
		wantNoCredentials(t, texts)
	}
}

func TestURLCredentials_BadBaseURL_ConfigErrorWithoutThem(t *testing.T) {
	t.Parallel()
	_, err := github.New(github.Config{Owner: "o", Repo: "r", BaseURL: "ftp://" + urlUser + ":" + urlPassword + "@host/"})
	if !errors.Is(err, policy.ErrConfig) {
		t.Fatalf("New = %v, want ErrConfig", err)
	}
	if !strings.Contains(err.Error(), "BaseURL") {
		t.Errorf("error %q does not name BaseURL", err)
	}
	wantNoCredentials(t, map[string]string{"New": err.Error()})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
