package cloudflare_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry/cloudflare"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
)

// Cloudflare answers a token it cannot parse (a Global API Key pasted into
// CLOUDFLARE_API_TOKEN, a truncated token) with 400 and code 6003 "Invalid
// request headers" (error_chain 6111 "Invalid format for Authorization
// header"), not 401/403: that is the same configuration error as a refused
// token (exit 2), and it should name the setting to fix.
func TestStore_MalformedToken400Code6003_ConfigErrorNamingTheSetting(t *testing.T) {
	t.Parallel()
	w := mustWorld(t, nil, nil)
	w.fake.FailNext(cloudflaretest.Fault{Status: http.StatusBadRequest, Code: 6003, Message: "Invalid request headers"})
	_, err := w.store.Get(t.Context(), "policy:a")
	if !errors.Is(err, policy.ErrConfig) {
		t.Errorf("Get after 400 code 6003: err = %v, want policy.ErrConfig (exit 2)", err)
	}
	if err != nil && !strings.Contains(err.Error(), "CLOUDFLARE_API_TOKEN") {
		t.Errorf("Get after 400 code 6003: err = %v, want it to name CLOUDFLARE_API_TOKEN", err)
	}
}

// A refused token (401/403) and a missing namespace are configuration
// errors; the messages should name the setting, as Config.Validate's do.
func TestStore_RefusedTokenAndMissingNamespace_NameTheSetting(t *testing.T) {
	t.Parallel()
	tok := mustWorld(t, nil, func(c *cloudflare.Config) { c.APIToken = "wrong-" + secretToken })
	_, err := tok.store.Get(t.Context(), "policy:a")
	if !errors.Is(err, policy.ErrConfig) || !strings.Contains(err.Error(), "CLOUDFLARE_API_TOKEN") {
		t.Errorf("wrong token: err = %v, want a config error naming CLOUDFLARE_API_TOKEN", err)
	}
	ns := mustWorld(t, nil, func(c *cloudflare.Config) { c.NamespaceID = "ns-missing" })
	_, err = ns.store.Get(t.Context(), "policy:a")
	if !errors.Is(err, policy.ErrConfig) || !strings.Contains(err.Error(), "CLOUDFLARE_KV_NAMESPACE_ID") {
		t.Errorf("missing namespace: err = %v, want a config error naming CLOUDFLARE_KV_NAMESPACE_ID", err)
	}
}
