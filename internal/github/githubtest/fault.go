package githubtest

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Fault is an answer the server gives instead of the real one.
type Fault struct {
	Status int         // HTTP status
	Header http.Header // headers set on the answer (over the usual rate-limit headers)
	Body   string      // JSON body
	// Hang holds the request open until the client gives up (its context or
	// timeout) or the server closes; nothing is answered.
	Hang bool
	// Stall answers for real but stops after StallAfter bytes of the body
	// and holds the request open, as Hang does: a download that stalls.
	// Status, Header and Body are not used.
	Stall      bool
	StallAfter int64
}

// Documentation URLs GitHub sends with rate-limit answers; go-github types a
// 403 as *github.AbuseRateLimitError by the "secondary-rate-limits" suffix.
const (
	PrimaryRateLimitDoc   = "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"
	SecondaryRateLimitDoc = "https://docs.github.com/rest/overview/resources-in-the-rest-api#secondary-rate-limits"
)

// PrimaryRateLimit is GitHub's answer when the hourly quota is spent: status
// 403 (or 429), X-RateLimit-Remaining 0 and X-RateLimit-Reset at reset.
func PrimaryRateLimit(status int, reset time.Time) Fault {
	h := http.Header{}
	h.Set("X-RateLimit-Limit", "60")
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Used", "60")
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
	return Fault{
		Status: status,
		Header: h,
		Body:   jsonMessage("API rate limit exceeded for 203.0.113.7. (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)", PrimaryRateLimitDoc),
	}
}

// SecondaryRateLimit is GitHub's answer to too many requests in a burst:
// status 403 (or 429) with Retry-After in whole seconds.
func SecondaryRateLimit(status int, retryAfter time.Duration) Fault {
	h := http.Header{}
	h.Set("Retry-After", strconv.FormatInt(int64(retryAfter/time.Second), 10))
	return Fault{
		Status: status,
		Header: h,
		Body:   jsonMessage("You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID 0000:0000:0000000:0000000:00000000.", SecondaryRateLimitDoc),
	}
}

// ServerError is a 5xx answer such as 502 Bad Gateway.
func ServerError(status int) Fault {
	return Fault{Status: status, Body: jsonMessage("Server Error", "")}
}

// StatusError is any JSON error answer, e.g. StatusError(422, "No common ancestor").
func StatusError(status int, message string) Fault {
	return Fault{Status: status, Body: jsonMessage(message, "https://docs.github.com/rest")}
}

// StaleHead answers a head request (KindCommitSHA) with sha: what GitHub
// can answer for a moment after a push, the branch as it was before it.
func StaleHead(sha string) Fault {
	return Fault{Status: http.StatusOK, Body: sha}
}

// Hang never answers; the client's timeout or context ends the request.
func Hang() Fault { return Fault{Hang: true} }

// Stall sends the real answer's status, headers and first after bytes of
// body, then nothing until the client gives up.
func Stall(after int64) Fault { return Fault{Stall: true, StallAfter: after} }

// stallWriter passes the first left bytes of a body, flushes them, and
// then waits (see Stall) and fails the handler's writes.
type stallWriter struct {
	*statusWriter
	left int64
	wait func()
}

func (w *stallWriter) Write(b []byte) (int, error) {
	if w.left <= 0 {
		return 0, w.stall()
	}
	n, err := w.statusWriter.Write(b[:min(int64(len(b)), w.left)])
	w.left -= int64(n)
	if err != nil || n == len(b) {
		return n, err
	}
	return n, w.stall()
}

// stall sends what was written and waits; the handler's writes then fail.
func (w *stallWriter) stall() error {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	w.Flush()
	w.wait()
	return errStalled
}

var errStalled = errors.New("githubtest: stalled")

// AnyKind matches every endpoint kind in FailNext and FailRandom.
const AnyKind = ""

type faultRule struct {
	kind      string
	remaining int // < 0: forever (FailNext) ; unused when rng is set
	fault     Fault
	rng       *rand.Rand
	p         float64
	within    string // only requests whose path contains it; "" for all
	// seeded (FailSeeded): the draw is a hash of seed, the request's path
	// and how many times the rule saw that path before.
	seeded bool
	seed   uint64
	seen   map[string]int
}

// FailNext answers the next n requests of an endpoint kind (AnyKind for all)
// with fault; n < 0 means every request from now on. Rules are consulted in the
// order they were added.
func (s *Server) FailNext(kind string, n int, fault Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &faultRule{kind: kind, remaining: n, fault: fault})
}

// FailRandom answers each request of an endpoint kind with fault with
// probability p, drawn from a generator seeded with seed (deterministic for
// a given sequence of requests).
func (s *Server) FailRandom(kind string, seed uint64, p float64, fault Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &faultRule{kind: kind, fault: fault, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), p: p})
}

// FailWithin answers every request of an endpoint kind whose URL path
// contains within (a blob sha, say) with fault, from now on: one file that
// cannot be read while the others can.
func (s *Server) FailWithin(kind, within string, fault Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &faultRule{kind: kind, remaining: -1, fault: fault, within: within})
}

// FailSeeded answers each request of an endpoint kind with fault with
// probability p, decided by seed and the request itself (its path, and how
// many times this rule saw that path before), not by the order requests
// arrive: concurrent requests (blobs read in parallel) meet the same faults
// whatever order they reach the server in.
func (s *Server) FailSeeded(kind string, seed uint64, p float64, fault Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &faultRule{kind: kind, fault: fault, p: p, seeded: true, seed: seed, seen: make(map[string]int)})
}

// seededDraw is a number in [0, 1) that depends only on seed, path and n.
func seededDraw(seed uint64, path string, n int) float64 {
	h := fnv.New64a()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], seed)
	binary.LittleEndian.PutUint64(b[8:], uint64(n))
	_, _ = h.Write(b[:])
	_, _ = h.Write([]byte(path))
	return float64(h.Sum64()>>11) / (1 << 53)
}

// ClearFaults removes every fault rule.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// nextFault picks the fault for a request of kind to path, if any; s.mu
// must be held.
func (s *Server) nextFault(kind, path string) *Fault {
	for _, r := range s.faults {
		if (r.kind != AnyKind && r.kind != kind) || !strings.Contains(path, r.within) {
			continue
		}
		if r.seeded {
			n := r.seen[path]
			r.seen[path] = n + 1
			if seededDraw(r.seed, path, n) < r.p {
				f := r.fault
				return &f
			}
			continue
		}
		if r.rng != nil {
			if r.rng.Float64() < r.p {
				f := r.fault
				return &f
			}
			continue
		}
		if r.remaining == 0 {
			continue
		}
		if r.remaining > 0 {
			r.remaining--
		}
		f := r.fault
		return &f
	}
	return nil
}
