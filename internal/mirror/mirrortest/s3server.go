package mirrortest

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Fake credentials of the server; the server does not check signatures.
const (
	AccessKeyID     = "AKIAMIRRORTEST000001"
	SecretAccessKey = "mirrortest-secret-do-not-leak-0123456789"
	Bucket          = "policies-test"
)

// Operations a fault can target.
const (
	OpPut    = "put"
	OpDelete = "delete"
	OpList   = "list"
	OpGet    = "get"
)

// Request is one request the server received, as it arrived.
type Request struct {
	Op     string
	Method string
	Path   string // unescaped: /bucket/key
	Query  string
	Header http.Header
	Body   []byte
	// ContentLength is the request's declared length (-1 when chunked).
	ContentLength int64
}

// S3Server is an in-process S3 server with one bucket, Bucket.
type S3Server struct {
	URL     string       // https://127.0.0.1:port
	Client  *http.Client // trusts the server's certificate
	Backend gofakes3.Backend
	Faults  *Faults

	mu       sync.Mutex
	requests []Request
}

// NewS3Server starts a server, closed at the end of the test.
func NewS3Server(t testing.TB) *S3Server {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(Bucket); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	fake := gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog()))
	s := &S3Server{Backend: backend, Faults: newFaults()}
	srv := httptest.NewTLSServer(s.middleware(fake.Server()))
	t.Cleanup(srv.Close)
	client := srv.Client()
	tr := client.Transport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64 // as the target's own client: no handshake per request
	client.Transport = tr
	s.URL, s.Client = srv.URL, client
	return s
}

// Requests returns the requests received so far.
func (s *S3Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Count returns how many requests of op arrived.
func (s *S3Server) Count(op string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Op == op {
			n++
		}
	}
	return n
}

// PutRaw stores body at key in the backend directly, bypassing HTTP and any
// target: a hand edit, or a foreign object.
func (s *S3Server) PutRaw(t testing.TB, key string, body []byte) {
	t.Helper()
	meta := map[string]string{"Content-Type": "text/plain"}
	if _, err := s.Backend.PutObject(Bucket, key, meta, bytes.NewReader(body), int64(len(body)), nil); err != nil {
		t.Fatalf("put %s in the backend: %v", key, err)
	}
}

// ReadRaw returns the body and the user metadata (names lowercase, without
// x-amz-meta-, values as stored) at key in the backend; false when absent.
func (s *S3Server) ReadRaw(t testing.TB, key string) ([]byte, map[string]string, bool) {
	t.Helper()
	obj, err := s.Backend.GetObject(Bucket, key, nil)
	if gofakes3.HasErrorCode(err, gofakes3.ErrNoSuchKey) {
		return nil, nil, false
	}
	if err != nil {
		t.Fatalf("get %s from the backend: %v", key, err)
	}
	defer obj.Contents.Close()
	body, err := io.ReadAll(obj.Contents)
	if err != nil {
		t.Fatalf("read %s from the backend: %v", key, err)
	}
	meta := map[string]string{}
	for k, v := range obj.Metadata {
		if name, ok := strings.CutPrefix(strings.ToLower(k), "x-amz-meta-"); ok {
			meta[name] = v
		}
	}
	return body, meta, true
}

// middleware records each request, checks DeleteObjects' digest, then
// applies the faults before passing it to gofakes3.
func (s *S3Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		op := opOf(r)
		s.mu.Lock()
		s.requests = append(s.requests, Request{Op: op, Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
			Header: r.Header.Clone(), Body: body, ContentLength: r.ContentLength})
		s.mu.Unlock()
		if op == OpDelete {
			if code, msg := checkDigest(r.Header, body); code != "" {
				writeError(w, http.StatusBadRequest, code, msg)
				return
			}
		}
		if s.Faults.apply(w, r, op) {
			return
		}
		if op == OpDelete && s.Faults.hasKeyErrors() {
			s.deleteWithKeyErrors(w, r, body, next)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func opOf(r *http.Request) string {
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)
	hasKey := len(parts) == 2 && parts[1] != ""
	_, del := r.URL.Query()["delete"]
	switch {
	case r.Method == http.MethodPost && del:
		return OpDelete
	case r.Method == http.MethodPut && hasKey:
		return OpPut
	case r.Method == http.MethodGet && !hasKey:
		return OpList
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		return OpGet
	}
	return strings.ToLower(r.Method)
}

// checkDigest enforces S3's rule for DeleteObjects: a Content-MD5 or a
// flexible checksum header must come, and each that comes must match.
func checkDigest(h http.Header, body []byte) (code, msg string) {
	md5v, crcv := h.Get("Content-MD5"), h.Get("X-Amz-Checksum-Crc32")
	if md5v == "" && crcv == "" {
		return "InvalidRequest", "Missing required header for this request: Content-MD5"
	}
	if md5v != "" {
		sum := md5.Sum(body)
		if md5v != base64.StdEncoding.EncodeToString(sum[:]) {
			return "BadDigest", "The Content-MD5 you specified did not match what we received."
		}
	}
	if crcv != "" {
		var sum [4]byte
		binary.BigEndian.PutUint32(sum[:], crc32.ChecksumIEEE(body))
		if crcv != base64.StdEncoding.EncodeToString(sum[:]) {
			return "BadDigest", "The CRC32 you specified did not match the calculated checksum."
		}
	}
	return "", ""
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><RequestId>fault</RequestId></Error>`, code, msg)
}

// deleteWithKeyErrors passes gofakes3 the keys without an injected error,
// and answers 200 with those keys' errors added, as S3 does.
func (s *S3Server) deleteWithKeyErrors(w http.ResponseWriter, r *http.Request, body []byte, next http.Handler) {
	var in gofakes3.DeleteRequest
	if err := xml.Unmarshal(body, &in); err != nil {
		writeError(w, http.StatusBadRequest, "MalformedXML", err.Error())
		return
	}
	var keep []gofakes3.ObjectID
	var failed []gofakes3.ErrorResult
	for _, o := range in.Objects {
		if code, ok := s.Faults.keyError(o.Key); ok {
			failed = append(failed, gofakes3.ErrorResult{Key: o.Key, Code: gofakes3.ErrorCode(code), Message: "injected"})
			continue
		}
		keep = append(keep, o)
	}
	in.Objects = keep
	fwd, err := xml.Marshal(in)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	r2 := r.Clone(r.Context())
	r2.Body, r2.ContentLength = io.NopCloser(bytes.NewReader(fwd)), int64(len(fwd))
	r2.Header.Set("Content-Length", strconv.Itoa(len(fwd)))
	rec := httptest.NewRecorder()
	next.ServeHTTP(rec, r2)
	var out gofakes3.MultiDeleteResult
	if rec.Code != http.StatusOK || xml.Unmarshal(rec.Body.Bytes(), &out) != nil {
		writeError(w, rec.Code, "InternalError", "backend delete failed")
		return
	}
	out.Error = append(out.Error, failed...)
	w.Header().Set("Content-Type", "application/xml")
	if err := xml.NewEncoder(w).Encode(out); err != nil {
		return
	}
}

// Faults are the faults a server injects. Safe for concurrent use.
type Faults struct {
	mu        sync.Mutex
	fail      map[string][]fault // op → its next answers
	slow      map[string]int     // op → how many next answers are slow
	delay     time.Duration
	keyErrors map[string]string // key → S3 error code inside a 200 delete answer
	rate      float64           // seeded: share of requests answered 503
	rnd       *rand.Rand
}

func newFaults() *Faults {
	return &Faults{fail: map[string][]fault{}, slow: map[string]int{}, keyErrors: map[string]string{}}
}

// fault is one injected answer: its status and S3 error code.
type fault struct {
	status int
	code   string
}

// FailNext answers the next n requests of op with status (a 5xx) and an S3
// error body: code ServiceUnavailable for a 503, InternalError otherwise.
func (f *Faults) FailNext(op string, n, status int) {
	code := "InternalError"
	if status == http.StatusServiceUnavailable {
		code = "ServiceUnavailable"
	}
	f.FailNextWith(op, n, status, code)
}

// FailNextWith answers the next n requests of op with status and an S3
// error body of code, as S3 answers a refusal it names (403
// RequestTimeTooSkewed, say).
func (f *Faults) FailNextWith(op string, n, status int, code string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.fail[op] = append(f.fail[op], fault{status, code})
	}
}

// StopFailing answers the requests of op again, however many failures
// FailNext left: the store recovered, or its key was fixed.
func (f *Faults) StopFailing(op string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[op] = nil
}

// SlowNext holds the next n requests of op for d before answering (or until
// the client gives up).
func (f *Faults) SlowNext(op string, n int, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.slow[op] += n
	f.delay = d
}

// StopSlow answers the requests of op at once again, however many slow
// answers SlowNext left.
func (f *Faults) StopSlow(op string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.slow[op] = 0
}

// KeyError makes every DeleteObjects answer report code for key inside its
// 200 answer, leaving the object in place; "" clears it.
func (f *Faults) KeyError(key, code string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if code == "" {
		delete(f.keyErrors, key)
		return
	}
	f.keyErrors[key] = code
}

// Random answers a share rate of all requests with 503, drawn from a
// generator seeded with seed (0 turns it off).
func (f *Faults) Random(seed uint64, rate float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rate, f.rnd = rate, rand.New(rand.NewPCG(seed, seed))
}

func (f *Faults) hasKeyErrors() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.keyErrors) > 0
}

func (f *Faults) keyError(key string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	code, ok := f.keyErrors[key]
	return code, ok
}

// apply injects the next fault for op, if any, and says whether it answered.
func (f *Faults) apply(w http.ResponseWriter, r *http.Request, op string) bool {
	f.mu.Lock()
	var next fault
	if q := f.fail[op]; len(q) > 0 {
		next, f.fail[op] = q[0], q[1:]
	} else if f.rnd != nil && f.rnd.Float64() < f.rate {
		next = fault{http.StatusServiceUnavailable, "ServiceUnavailable"}
	}
	var delay time.Duration
	if next.status == 0 && f.slow[op] > 0 {
		f.slow[op]--
		delay = f.delay
	}
	f.mu.Unlock()
	if delay > 0 && sleep(r.Context(), delay) {
		// The client gave up: end the connection with no answer at all. A
		// handler that just returned sent an empty 200, which a client that
		// had not yet let go read as an empty listing (seen under load).
		panic(http.ErrAbortHandler)
	}
	if next.status != 0 {
		writeError(w, next.status, next.code, "injected")
		return true
	}
	return false
}

// sleep waits d; true when the client went away meanwhile (nothing more to
// answer).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return true
	case <-t.C:
		return false
	}
}
