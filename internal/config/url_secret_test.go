package config_test

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/config"
	"github.com/knue/syncjob/internal/policy"
)

// TestBind_URLWithCredentialsMistyped_RefusedWithoutTheSecret: credentials
// written into a URL setting with a typo ("https:/user:secret@host", no
// scheme at all), where url.Parse sees no user info, are refused, naming
// the setting, and the error does not show them (an adversarial helper
// found CONTENT_ENDPOINT's error quoting the secret whole).
func TestBind_URLWithCredentialsMistyped_RefusedWithoutTheSecret(t *testing.T) {
	t.Parallel()
	const secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	cf := map[string]string{"CLOUDFLARE_ACCOUNT_ID": "acc", "CLOUDFLARE_KV_NAMESPACE_ID": "ns", "CLOUDFLARE_API_TOKEN": strings.Repeat("t", 40)}
	for _, c := range []struct{ setting, value string }{
		{"CONTENT_ENDPOINT", "https:/AKIAIOSFODNN7EXAMPLE:" + secret + "@acct.r2.cloudflarestorage.com"},
		{"CONTENT_ENDPOINT", "AKIAIOSFODNN7EXAMPLE:" + secret + "@acct.r2.cloudflarestorage.com"},
		{"GITHUB_API_URL", "https:/x-access-token:" + secret + "@ghe.example.edu/api/v3"},
		{"CLOUDFLARE_API_URL", "https:/user:" + secret + "@api.example.com/client/v4"},
	} {
		env := map[string]string{"GITHUB_REPO": "knue/policies", "CONTENT_BUCKET": "policies-prod", c.setting: c.value}
		for k, v := range cf {
			env[k] = v
		}
		fs := flag.NewFlagSet("sync", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		done := config.Bind(fs, func(k string) string { return env[k] }, config.Source|config.Registry|config.Run|config.Mirror)
		if err := fs.Parse(nil); err != nil {
			t.Fatal(err)
		}
		cfg, err := done()
		if err == nil {
			err = cfg.ValidateSource()
		}
		var ce *policy.ConfigError
		if !errors.As(err, &ce) || ce.Setting != c.setting {
			t.Errorf("%s=%s: %v, want a configuration error naming %s", c.setting, c.value, err, c.setting)
			continue
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "AKIA") {
			t.Errorf("the configuration error shows the credentials: %v", err)
		}
	}
}
