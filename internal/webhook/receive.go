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
	refuse := func(status int, reason string) Outcome {
		o.Kind, o.Status, o.Reason = Refused, status, reason
		return o
	}
	limit := MaxBody
	if r.IsBase64Encoded {
		limit = base64.StdEncoding.EncodedLen(MaxBody)
	}
	if len(r.Body) > limit {
		return refuse(http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes", MaxBody))
	}
	if r.Method != http.MethodPost {
		return refuse(http.StatusMethodNotAllowed, "only POST is accepted")
	}
	body := []byte(r.Body)
	if r.IsBase64Encoded {
		var err error
		if body, err = base64.StdEncoding.DecodeString(r.Body); err != nil {
			return refuse(http.StatusBadRequest, "body is not valid base64")
		}
		if len(body) > MaxBody {
			return refuse(http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes", MaxBody))
		}
	}

	key, err := secret()
	if err != nil {
		o.Kind, o.Status, o.Reason, o.Err = Failed, http.StatusInternalServerError, "webhook secret unavailable", err
		return o
	}
	if err := Verify(key, body, r.Header(HeaderSignature)); err != nil {
		if errors.Is(err, ErrNoSecret) {
			o.Kind, o.Status, o.Reason, o.Err = Failed, http.StatusInternalServerError, "webhook secret unavailable", err
			return o
		}
		o.Kind, o.Status, o.Err = Rejected, http.StatusUnauthorized, err
		o.Reason = "signature missing or wrong"
		if errors.Is(err, ErrUnsigned) && r.Header(HeaderSignatureSHA1) != "" {
			o.Reason = "only the sha1 X-Hub-Signature was sent; X-Hub-Signature-256 is required"
		}
		return o
	}

	// From here on the body and headers are GitHub's.
	switch o.Event {
	case "ping":
		o.Kind, o.Status, o.Reason = Ping, http.StatusOK, "pong"
		return o
	case "push":
	default:
		o.Kind, o.Status, o.Reason = Ignored, http.StatusAccepted, fmt.Sprintf("event %q is not push", o.Event)
		return o
	}
	invalid := func(status int, reason string) Outcome {
		o.Kind, o.Status, o.Reason = Invalid, status, reason
		return o
	}
	if ct := r.Header(HeaderContentType); strings.HasPrefix(strings.ToLower(ct), "application/x-www-form-urlencoded") {
		return invalid(http.StatusUnsupportedMediaType, "content type must be application/json (the webhook's Content type setting)")
	}
	p, err := parsePush(body)
	if err != nil {
		return invalid(http.StatusBadRequest, err.Error())
	}
	o.Push = &p
	ignore := func(reason string) Outcome {
		o.Kind, o.Status, o.Reason = Ignored, http.StatusAccepted, reason
		return o
	}
	switch want := BranchRef(t.Branch); {
	case !strings.EqualFold(p.Repo, t.Repo):
		return ignore(fmt.Sprintf("push to %s, not %s", p.Repo, t.Repo))
	case p.Ref != want:
		return ignore(fmt.Sprintf("push to %s, not %s", p.Ref, want))
	case p.Deleted:
		return ignore("push deletes " + p.Ref)
	case !IsCommitSHA(p.After):
		return invalid(http.StatusBadRequest, "push has no after commit sha")
	case o.Delivery == "":
		return invalid(http.StatusBadRequest, "no X-GitHub-Delivery header")
	case len(strings.TrimSpace(r.Header(HeaderDelivery))) > MaxDeliveryLen:
		return invalid(http.StatusBadRequest, fmt.Sprintf("X-GitHub-Delivery longer than %d bytes", MaxDeliveryLen))
	}
	o.Kind, o.Status, o.Reason = Sync, http.StatusAccepted, "sync of "+p.After
	return o
}
