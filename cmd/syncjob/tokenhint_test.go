package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/policy"
)

// TestTokenHint_NotForCloudflaresLimit: Cloudflare's rate limit (a 429's
// block, or the rate window past the deadline — a later window's budget
// read, say) is no GitHub limit: GITHUB_TOKEN does not raise it, and the
// hint sends the operator the wrong way.
func TestTokenHint_NotForCloudflaresLimit(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("write budget: registry: read run history: %w", &policy.RateLimitError{API: "cloudflare", Kind: "api", RetryAt: time.Now().Add(5 * time.Minute)})
	if got := tokenHint(err, "").Error(); strings.Contains(got, "GITHUB_TOKEN") {
		t.Errorf("%s: names GITHUB_TOKEN for Cloudflare's limit", got)
	}
}
