package github

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
)

func TestRetryable_UnreachableGitHubIsNotRetried(t *testing.T) {
	t.Parallel()
	dial := func(err error) error {
		return &url.Error{Op: "Get", URL: "https://api.github.com/repos/knue/policies/commits/main",
			Err: &net.OpError{Op: "dial", Net: "tcp", Err: err}}
	}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{dial(&net.DNSError{Err: "no such host", Name: "api.github.com", IsNotFound: true}), false},
		{dial(&net.DNSError{Err: "server misbehaving", Name: "api.github.com", IsTemporary: true}), false},
		{dial(&net.DNSError{Err: "i/o timeout", Name: "api.github.com", IsTimeout: true}), true},
		{dial(os.NewSyscallError("connect", syscall.ECONNREFUSED)), false},
		{dial(os.NewSyscallError("connect", syscall.ENETUNREACH)), false},
		{dial(os.NewSyscallError("read", syscall.ECONNRESET)), true}, // reached, then cut: worth another try
	} {
		if got := retryable(fmt.Errorf("github: get head: %w", tc.err)); got != tc.want {
			t.Errorf("retryable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
