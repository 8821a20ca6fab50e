package webhook_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/webhook"
)

func TestVerify_GitHubsOwnExample(t *testing.T) {
	// GitHub's documentation ("Validating webhook deliveries") gives this
	// secret, payload and signature to test an implementation against.
	const sig = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	if err := webhook.Verify([]byte("It's a Secret to Everybody"), []byte("Hello, World!"), sig); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got := webhook.Sign([]byte("It's a Secret to Everybody"), []byte("Hello, World!")); got != sig {
		t.Errorf("Sign = %s, want %s", got, sig)
	}
}

func TestVerify_RefusesWhatIsNotTheBodysSignature(t *testing.T) {
	secret, body := []byte("s3cret"), []byte(`{"ref":"refs/heads/main"}`)
	good := webhook.Sign(secret, body)
	for _, tc := range []struct {
		name      string
		secret    []byte
		body      []byte
		signature string
		want      error
	}{
		{"valid", secret, body, good, nil},
		{"valid, upper-case hex", secret, body, "sha256=" + strings.ToUpper(strings.TrimPrefix(good, "sha256=")), nil},
		{"missing", secret, body, "", webhook.ErrUnsigned},
		{"wrong secret", []byte("other"), body, good, webhook.ErrMismatch},
		{"another body", secret, []byte(`{"ref":"refs/heads/dev"}`), good, webhook.ErrMismatch},
		{"a body with one more byte", secret, append(append([]byte{}, body...), '\n'), good, webhook.ErrMismatch},
		{"sha1 form", secret, body, "sha1=0123456789abcdef0123456789abcdef01234567", webhook.ErrMalformed},
		{"no prefix", secret, body, strings.TrimPrefix(good, "sha256="), webhook.ErrMalformed},
		{"short", secret, body, good[:len(good)-2], webhook.ErrMalformed},
		{"not hex", secret, body, "sha256=" + strings.Repeat("zz", 32), webhook.ErrMalformed},
		{"two signatures", secret, body, good + "," + good, webhook.ErrMalformed},
		{"no secret", nil, body, good, webhook.ErrNoSecret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := webhook.Verify(tc.secret, tc.body, tc.signature); !errors.Is(err, tc.want) {
				t.Errorf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
}

func FuzzVerify_OnlyTheSignatureOfTheBodyPasses(f *testing.F) {
	f.Add([]byte("secret"), []byte("body"), "sha256=00")
	f.Add([]byte("x"), []byte{}, "")
	f.Fuzz(func(t *testing.T, secret, body []byte, signature string) {
		if len(secret) == 0 {
			return
		}
		if err := webhook.Verify(secret, body, webhook.Sign(secret, body)); err != nil {
			t.Fatalf("own signature refused: %v", err)
		}
		if webhook.Verify(secret, body, signature) == nil && !strings.EqualFold(strings.TrimSpace(signature), webhook.Sign(secret, body)) {
			t.Fatalf("signature %q accepted for another body", signature)
		}
	})
}
