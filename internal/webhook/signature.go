package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
)

// Header names GitHub sends. Lambda Function URLs deliver them lower-cased;
// Header looks them up in any case.
const (
	HeaderSignature     = "X-Hub-Signature-256"
	HeaderSignatureSHA1 = "X-Hub-Signature" // sent beside the sha256 one; never accepted alone
	HeaderEvent         = "X-GitHub-Event"
	HeaderDelivery      = "X-GitHub-Delivery"
	HeaderContentType   = "Content-Type"
)

const signaturePrefix = "sha256="

// Errors of Verify.
var (
	// ErrNoSecret: verifying with an empty key would let anyone sign.
	ErrNoSecret = errors.New("no webhook secret configured")
	// ErrUnsigned: the delivery carries no X-Hub-Signature-256.
	ErrUnsigned = errors.New("no X-Hub-Signature-256 header")
	// ErrMalformed: the header is not sha256= and 64 hex digits.
	ErrMalformed = errors.New("X-Hub-Signature-256 is not sha256= and 64 hex digits")
	// ErrMismatch: the signature is not the body's under the secret (a
	// wrong secret, or a body changed on the way).
	ErrMismatch = errors.New("X-Hub-Signature-256 does not match the body")
)

// Sign returns the X-Hub-Signature-256 value GitHub sends for body:
// "sha256=" and the hex HMAC-SHA256 of the body under secret.
func Sign(secret, body []byte) string {
	return signaturePrefix + hex.EncodeToString(mac(secret, body))
}

// Verify checks that signature, an X-Hub-Signature-256 value, is the
// HMAC-SHA256 of the exact body bytes under secret, comparing in constant
// time. It returns nil, ErrNoSecret, ErrUnsigned, ErrMalformed or
// ErrMismatch.
func Verify(secret, body []byte, signature string) error {
	if len(secret) == 0 {
		return ErrNoSecret
	}
	signature = strings.TrimSpace(signature)
	if signature == "" {
		return ErrUnsigned
	}
	hexSum, ok := strings.CutPrefix(signature, signaturePrefix)
	if !ok || len(hexSum) != 2*sha256.Size {
		return ErrMalformed
	}
	got, err := hex.DecodeString(hexSum)
	if err != nil {
		return ErrMalformed
	}
	if !hmac.Equal(got, mac(secret, body)) {
		return ErrMismatch
	}
	return nil
}

func mac(secret, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return m.Sum(nil)
}
