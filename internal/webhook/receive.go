package webhook

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// MaxBody is the largest body accepted: 1 MiB. GitHub caps payloads at
// 25 MB, but a push to a policy repository is a few kilobytes; anything
// larger is refused before it is hashed.
const MaxBody = 1 << 20

// Request is one HTTP request as a Lambda Function URL delivers it.
type Request struct {
	Method          string
	Headers         map[string]string // names in any case (Function URLs lower-case them)
	Body            string
	IsBase64Encoded bool
}

// Header returns the value of the header name, matched in any case.
func (r Request) Header(name string) string {
	if v, ok := r.Headers[name]; ok {
		return v
	}
	for k, v := range r.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// Target is the repository and branch a push must be to start a sync.
type Target struct {
	Repo   string // owner/name, matched in any case as GitHub does
	Branch string
}

// Kind is what became of a delivery.
type Kind string

// Kinds of outcome, each with the status the receiver answers.
const (
	Refused  Kind = "refused"  // 413, 405 or 400 before the signature was checked
	Rejected Kind = "rejected" // 401: signature missing or wrong
	Ping     Kind = "ping"     // 200: GitHub's test delivery
	Ignored  Kind = "ignored"  // 202: signed, but nothing to sync
	Invalid  Kind = "invalid"  // 400 or 415: signed, but not a push the receiver can read
	Sync     Kind = "sync"     // 202 once handed off: a push to the target branch
	Failed   Kind = "failed"   // 500: the secret could not be read
)

// Outcome is the decision on one delivery.
type Outcome struct {
	Kind   Kind
	Status int    // the HTTP status to answer
	Reason string // a few words for the answer and the log; never the body or the secret
	// Event and Delivery are the X-GitHub-Event and X-GitHub-Delivery
	// headers through Unverified: before the signature is verified they are
	// anyone's words, fit to log but not to trust.
	Event, Delivery string
	// Push is the verified push event (Ignored pushes, Sync).
	Push *Push
	// Err is why, for Rejected (ErrUnsigned, ErrMalformed, ErrMismatch)
	// and Failed (the secret's error).
	Err error
}

// Receive decides what to do with r, in this order: refuse a body over
// MaxBody (413) or a method other than POST (405); verify the
// X-Hub-Signature-256 of the exact body bytes (base64-decoded when the
// request says so) with the secret, before reading anything else (401);
// then answer a ping (200), ignore other events and pushes to another
// repository or branch or deleting the branch (202), and return Sync for a
// push to the target branch. secret is called only for a request that got
// that far; its error is a Failed outcome (500).
func Receive(r Request, secret func() ([]byte, error), t Target) Outcome {
	o := Outcome{Event: Unverified(r.Header(HeaderEvent)), Delivery: Unverified(r.Header(HeaderDelivery))}
	body, ok := o.readBody(r)
	if !ok || !o.authenticate(r, body, secret) {
		return o
	}
	// From here on the body and headers are GitHub's.
	o.decide(r, body, t)
	return o
}

// set gives the outcome its kind, status and reason.
func (o *Outcome) set(kind Kind, status int, reason string) {
	o.Kind, o.Status, o.Reason = kind, status, reason
}

// readBody refuses what is too large or not a POST, and returns the body's
// exact bytes (decoded from base64 when the request says so).
func (o *Outcome) readBody(r Request) ([]byte, bool) {
	limit := MaxBody
	if r.IsBase64Encoded {
		limit = base64.StdEncoding.EncodedLen(MaxBody)
	}
	tooLarge := fmt.Sprintf("body over %d bytes", MaxBody)
	if len(r.Body) > limit {
		o.set(Refused, http.StatusRequestEntityTooLarge, tooLarge)
		return nil, false
	}
	if r.Method != http.MethodPost {
		o.set(Refused, http.StatusMethodNotAllowed, "only POST is accepted")
		return nil, false
	}
	if !r.IsBase64Encoded {
		return []byte(r.Body), true
	}
	body, err := base64.StdEncoding.DecodeString(r.Body)
	switch {
	case err != nil:
		o.set(Refused, http.StatusBadRequest, "body is not valid base64")
		return nil, false
	case len(body) > MaxBody:
		o.set(Refused, http.StatusRequestEntityTooLarge, tooLarge)
		return nil, false
	}
	return body, true
}

// authenticate checks X-Hub-Signature-256 against the secret: a missing or
// wrong signature is Rejected (401), a secret that cannot be had Failed
// (500).
func (o *Outcome) authenticate(r Request, body []byte, secret func() ([]byte, error)) bool {
	key, err := secret()
	if err == nil {
		err = Verify(key, body, r.Header(HeaderSignature))
	}
	switch {
	case err == nil:
		return true
	case errors.Is(err, ErrNoSecret) || !isSignatureError(err):
		o.set(Failed, http.StatusInternalServerError, "webhook secret unavailable")
	case errors.Is(err, ErrUnsigned) && r.Header(HeaderSignatureSHA1) != "":
		o.set(Rejected, http.StatusUnauthorized, "only the sha1 X-Hub-Signature was sent; X-Hub-Signature-256 is required")
	default:
		o.set(Rejected, http.StatusUnauthorized, "signature missing or wrong")
	}
	o.Err = err
	return false
}

// decide answers a verified delivery: a ping, an event or push to ignore,
// one that is not a well-formed push, or a push to sync.
func (o *Outcome) decide(r Request, body []byte, t Target) {
	switch o.Event {
	case "ping":
		o.set(Ping, http.StatusOK, "pong")
		return
	case "push":
	default:
		o.set(Ignored, http.StatusAccepted, fmt.Sprintf("event %q is not push", o.Event))
		return
	}
	if ct := r.Header(HeaderContentType); strings.HasPrefix(strings.ToLower(ct), "application/x-www-form-urlencoded") {
		o.set(Invalid, http.StatusUnsupportedMediaType, "content type must be application/json (the webhook's Content type setting)")
		return
	}
	p, err := parsePush(body)
	if err != nil {
		o.set(Invalid, http.StatusBadRequest, err.Error())
		return
	}
	o.Push = &p
	switch want := BranchRef(t.Branch); {
	case !strings.EqualFold(p.Repo, t.Repo):
		o.set(Ignored, http.StatusAccepted, fmt.Sprintf("push to %s, not %s", p.Repo, t.Repo))
	case p.Ref != want:
		o.set(Ignored, http.StatusAccepted, fmt.Sprintf("push to %s, not %s", p.Ref, want))
	case p.Deleted:
		o.set(Ignored, http.StatusAccepted, "push deletes "+p.Ref)
	case !IsCommitSHA(p.After):
		o.set(Invalid, http.StatusBadRequest, "push has no after commit sha")
	case o.Delivery == "":
		o.set(Invalid, http.StatusBadRequest, "no X-GitHub-Delivery header")
	case len(strings.TrimSpace(r.Header(HeaderDelivery))) > MaxDeliveryLen:
		o.set(Invalid, http.StatusBadRequest, fmt.Sprintf("X-GitHub-Delivery longer than %d bytes", MaxDeliveryLen))
	default:
		o.set(Sync, http.StatusAccepted, "sync of "+p.After)
	}
}

// isSignatureError reports whether err says the delivery's signature is
// missing or wrong (the sender's fault), not that there is no secret.
func isSignatureError(err error) bool {
	return errors.Is(err, ErrUnsigned) || errors.Is(err, ErrMalformed) || errors.Is(err, ErrMismatch)
}
