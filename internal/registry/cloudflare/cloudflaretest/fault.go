package cloudflaretest

import (
	"net/http"
	"strconv"
	"time"
)

// Fault is an answer the server gives instead of the real one.
type Fault struct {
	Status int         // HTTP status
	Header http.Header // headers set on the answer
	Code   int         // v4 error code in the envelope
	// Message is the envelope's error message.
	Message string
	// Hang holds the request open until the client gives up (its context or
	// timeout) or the server closes; nothing is answered.
	Hang bool
}

// Cloudflare v4 error codes the fake answers with.
const (
	CodeAuth             = 10000 // missing or wrong token
	CodeRateLimited      = 971   // "Please wait and consider throttling your request speed"
	CodeKeyNotFound      = 10009 // get: 'key not found'
	CodeNamespaceMissing = 10013 // namespace not found
	CodeBadRequest       = 10001 // malformed request or a limit broken
	CodeKeyTooLong       = 10019
	CodeMetadataTooLarge = 10022
	CodeTooManyPairs     = 10020
	CodeBodyTooLarge     = 10011
	CodeTTLTooShort      = 10014
	CodeBadLimit         = 10026 // list limit outside 10..1000
	CodeNoRoute          = 7003
	CodeInternal         = 10043
)

// RateLimit is Cloudflare's 429 answer with error code 971 and Retry-After
// in whole seconds (none when retryAfter is 0).
func RateLimit(retryAfter time.Duration) Fault {
	h := http.Header{}
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64((retryAfter+time.Second-1)/time.Second), 10))
	}
	return Fault{Status: http.StatusTooManyRequests, Header: h, Code: CodeRateLimited, Message: "Please wait and consider throttling your request speed"}
}

// ServerError is a 5xx answer such as 502 Bad Gateway.
func ServerError(status int) Fault {
	return Fault{Status: status, Code: CodeInternal, Message: "internal server error"}
}

// Hang is a request that is never answered.
func Hang() Fault { return Fault{Hang: true} }

// Rates are the probabilities, each in [0, 1], that a request meets a fault,
// drawn from the fake's seeded generator in the order requests arrive.
type Rates struct {
	RateLimit   float64 // 429 with Retry-After
	ServerError float64 // 503
	Hang        float64
}

// FaultCounts are the faults a Fake injected, by kind.
type FaultCounts struct {
	Next             int // answers queued with FailNext
	RateLimit        int // 429s drawn from Rates
	ServerError      int // 503s drawn from Rates
	Hang             int // hangs drawn from Rates
	UnsuccessfulKeys int // keys of bulk writes and deletes reported unsuccessful (FailKeys, FailKeyFraction)
}
