package scalebench

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
)

// minimalClient is the floor a first sync is judged against: it makes only
// the requests a first sync cannot avoid — the branch head, the tarball
// (archive link and download, reading each title), one policy listing, the
// bulk writes (each policy and its queue entry, -scale.batch pairs a
// request (50 by default), 16 in flight) and one metadata write — with plain net/http, under the same
// 1,000-requests-per-5-minutes window the program keeps to. It writes the
// same bytes as the program (registry.PolicyPair, registry.QueuePair), so
// the two differ only in how they get there. It has none of the program's
// safety: no tree, no blob-sha check, no lease, no guard, no run record.
type minimalClient struct {
	gh, cf      string // API base URLs, without a trailing slash
	client      *http.Client
	window      *minimalWindow
	pairs       int // per bulk request
	concurrency int // bulk requests in flight
	// upload, when set, uploads each policy's mirror object while the
	// archive is read (the bench's -scale.mirror)
	upload *minimalUploader
	now    string // the run's time: lastUpdated of every entry and object
}

func newMinimalClient(t scaleTarget) *minimalClient {
	return &minimalClient{
		gh: t.gh.URL(), cf: t.cf.URL() + cloudflaretest.BasePath,
		client: &http.Client{
			Transport:     &http.Transport{MaxIdleConnsPerHost: 32},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		window:      &minimalWindow{n: cloudflare.DefaultRequestsPerWindow, w: cloudflare.DefaultWindow},
		pairs:       *scaleBatch,
		concurrency: 16,
	}
}

// firstSync writes every policy of the branch head into an empty namespace
// and returns how many it wrote.
func (m *minimalClient) firstSync(ctx context.Context) (int, error) {
	head, err := m.get(ctx, m.gh+"/repos/knue/policies/commits/main", "application/vnd.github.sha")
	if err != nil {
		return 0, err
	}
	sha := strings.TrimSpace(string(head))
	m.now = time.Now().UTC().Format(policy.TimeLayout)
	entries, err := m.titles(ctx, sha)
	if m.upload != nil {
		err = errors.Join(err, m.upload.wait())
	}
	if err != nil {
		return 0, err
	}
	if _, err := m.cfDo(ctx, http.MethodGet, m.kv("keys?prefix="+url.QueryEscape(registry.PolicyPrefix)), nil); err != nil {
		return 0, err
	}
	now := m.now
	pairs := make([]registry.Pair, 0, 2*len(entries))
	for _, e := range entries {
		e.Status, e.LastUpdated = policy.StatusActive, now
		pairs = append(pairs, registry.PolicyPair(e),
			registry.QueuePair(policy.QueueEntry{PolicyName: e.PolicyName, SHA: e.SHA, Operation: policy.OpAdd, CreatedAt: now}))
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(m.concurrency)
	for i := 0; i < len(pairs); i += m.pairs {
		batch := pairs[i:min(i+m.pairs, len(pairs))]
		g.Go(func() error { return m.bulkPut(gctx, batch) })
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	_, err = m.cfDo(ctx, http.MethodPut, m.kv("values/"+url.PathEscape(registry.LastCommitKey)), []byte(sha))
	return len(entries), err
}

// titles reads every policy's path, blob sha and title from the tarball.
func (m *minimalClient) titles(ctx context.Context, sha string) ([]policy.Entry, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m.gh+"/repos/knue/policies/tarball/"+sha, nil)
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || loc == "" {
		return nil, fmt.Errorf("archive link: %s", resp.Status)
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, loc, nil)
	if resp, err = m.client.Do(req); err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		return nil, err
	}
	var entries []policy.Entry
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries, nil
		}
		if err != nil {
			return nil, err
		}
		_, path, _ := strings.Cut(h.Name, "/")
		if h.Typeflag != tar.TypeReg || !policy.IsPolicyPath(path) {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		blob := sha1.New()
		blob.Write([]byte("blob " + strconv.Itoa(len(data)) + "\x00"))
		blob.Write(data)
		name := policy.NameOf(path)
		e := policy.Entry{PolicyName: name, Path: path, SHA: hex.EncodeToString(blob.Sum(nil)), Title: policy.Title(data, name)}
		entries = append(entries, e)
		if m.upload != nil && len(data) > 0 {
			m.upload.put(e, data, m.now)
		}
	}
}

// bulkPut writes one bulk request.
func (m *minimalClient) bulkPut(ctx context.Context, pairs []registry.Pair) error {
	type elem struct {
		Key      string          `json:"key"`
		Value    string          `json:"value"`
		Metadata json.RawMessage `json:"metadata,omitempty"`
	}
	body := make([]elem, len(pairs))
	for i, p := range pairs {
		body[i] = elem{Key: p.Key, Value: string(p.Value), Metadata: p.Metadata}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	res, err := m.cfDo(ctx, http.MethodPut, m.kv("bulk"), b)
	if err != nil {
		return err
	}
	var env struct {
		Result struct {
			UnsuccessfulKeys []string `json:"unsuccessful_keys"`
		} `json:"result"`
	}
	if err := json.Unmarshal(res, &env); err != nil || len(env.Result.UnsuccessfulKeys) > 0 {
		return fmt.Errorf("bulk write: %v %v", err, env.Result.UnsuccessfulKeys)
	}
	return nil
}

func (m *minimalClient) kv(rest string) string {
	return m.cf + "/accounts/" + cfAccountID + "/storage/kv/namespaces/" + cfNamespaceID + "/" + rest
}

func (m *minimalClient) get(ctx context.Context, u, accept string) ([]byte, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	req.Header.Set("Accept", accept)
	return m.send(req)
}

// cfDo sends one Cloudflare request once the window allows it.
func (m *minimalClient) cfDo(ctx context.Context, method, u string, body []byte) ([]byte, error) {
	if err := m.window.wait(ctx); err != nil {
		return nil, err
	}
	req, _ := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+cfToken)
	req.Header.Set("Content-Type", "application/json")
	return m.send(req)
}

func (m *minimalClient) send(req *http.Request) ([]byte, error) {
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s %s: %s: %.200s", req.Method, req.URL.Path, resp.Status, b)
	}
	return b, err
}

// minimalWindow lets at most n requests start in any span of w, as the
// program's client does (cloudflare.DefaultRequestsPerWindow).
type minimalWindow struct {
	n      int
	w      time.Duration
	mu     sync.Mutex
	stamps []time.Time
}

func (l *minimalWindow) wait(ctx context.Context) error {
	for {
		l.mu.Lock()
		now := time.Now()
		for len(l.stamps) > 0 && now.Sub(l.stamps[0]) >= l.w {
			l.stamps = l.stamps[1:]
		}
		if len(l.stamps) < l.n {
			l.stamps = append(l.stamps, now)
			l.mu.Unlock()
			return nil
		}
		d := l.stamps[0].Add(l.w).Sub(now)
		l.mu.Unlock()
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
