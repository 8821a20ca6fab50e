package github

import (
	"net/http"
	"sync/atomic"
)

// countingTransport counts every request that leaves for GitHub.
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.n.Add(1)
	return t.next.RoundTrip(req)
}

// authTransport sends the token to the API host only: an archive download
// redirected to another host (codeload, a CDN) carries its own signature and
// must not receive the token.
type authTransport struct {
	next  http.RoundTripper
	token string
	host  string
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.token == "" || req.URL.Host != t.host || req.Header.Get("Authorization") != "" {
		return t.next.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.next.RoundTrip(r)
}

// newHTTPClient is hc (its Timeout and Jar) with its transport wrapped: every
// request is counted in n, and the token is sent to apiHost only.
func newHTTPClient(hc *http.Client, token, apiHost string, n *atomic.Int64) *http.Client {
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	return &http.Client{
		Transport: &authTransport{
			next:  &countingTransport{next: next, n: n},
			token: token,
			host:  apiHost,
		},
		Timeout: hc.Timeout,
		Jar:     hc.Jar,
	}
}
