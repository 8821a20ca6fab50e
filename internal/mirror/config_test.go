package mirror_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/policy"
)

func TestConfig_Validate(t *testing.T) {
	t.Parallel()
	r2 := mirror.Config{Bucket: "policies", Endpoint: "https://acct.r2.cloudflarestorage.com", AccessKeyID: "id", SecretAccessKey: "secret"}
	with := func(f func(*mirror.Config)) mirror.Config { c := r2; f(&c); return c }
	tests := []struct {
		name  string
		cfg   mirror.Config
		names string // the setting the error must name; "" means valid
	}{
		{"off", mirror.Config{}, ""},
		{"folder", mirror.Config{Dir: "/tmp/x"}, ""},
		{"folder with a prefix", mirror.Config{Dir: "/tmp/x", Prefix: "kb/"}, ""},
		{"r2", r2, ""},
		{"aws s3 with the default chain", mirror.Config{Bucket: "my.bucket-1"}, ""},
		{"http endpoint (a local server)", with(func(c *mirror.Config) { c.Endpoint = "http://127.0.0.1:9000" }), ""},
		{"both targets", with(func(c *mirror.Config) { c.Dir = "/tmp/x" }), "CONTENT_DIR and CONTENT_BUCKET"},
		{"endpoint without bucket", mirror.Config{Endpoint: "https://x"}, "CONTENT_BUCKET"},
		{"keys with a folder", mirror.Config{Dir: "/tmp/x", AccessKeyID: "id", SecretAccessKey: "the-secret-key"}, "CONTENT_BUCKET"},
		{"only the key id", with(func(c *mirror.Config) { c.SecretAccessKey = "" }), "CONTENT_SECRET_ACCESS_KEY"},
		{"only the secret", with(func(c *mirror.Config) { c.AccessKeyID = "" }), "CONTENT_ACCESS_KEY_ID"},
		{"endpoint not a URL", with(func(c *mirror.Config) { c.Endpoint = "acct.r2.cloudflarestorage.com" }), "CONTENT_ENDPOINT"},
		{"endpoint ftp", with(func(c *mirror.Config) { c.Endpoint = "ftp://host" }), "CONTENT_ENDPOINT"},
		{"endpoint with credentials", with(func(c *mirror.Config) { c.Endpoint = "https://keyid:hunter2@acct.r2.cloudflarestorage.com" }), "CONTENT_ENDPOINT"},
		{"endpoint with a query", with(func(c *mirror.Config) { c.Endpoint = "https://host/?x=1" }), "CONTENT_ENDPOINT"},
		{"bad bucket", with(func(c *mirror.Config) { c.Bucket = "Policies_Prod" }), "CONTENT_BUCKET"},
		{"bad prefix", with(func(c *mirror.Config) { c.Prefix = "policies" }), "CONTENT_PREFIX"},
		{"prefix escaping", mirror.Config{Dir: "/tmp/x", Prefix: "../up/"}, "CONTENT_PREFIX"},
		{"negative retries", with(func(c *mirror.Config) { c.MaxRetries = -1 }), "MaxRetries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.names == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.names) || !errors.Is(err, policy.ErrConfig) {
				t.Fatalf("Validate: %v; want an ErrConfig naming %s", err, tt.names)
			}
			for _, secret := range []string{"hunter2", tt.cfg.SecretAccessKey} {
				if secret != "" && strings.Contains(err.Error(), secret) {
					t.Fatalf("secret in %q", err)
				}
			}
		})
	}
}

func TestNew_BuildsTheConfiguredTarget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	f, err := mirror.New(ctx, mirror.Config{Dir: dir})
	if _, ok := f.(*mirror.Folder); !ok || err != nil {
		t.Fatalf("New(dir) = %T, %v", f, err)
	}
	if !strings.Contains(f.Name(), dir) || !strings.Contains(f.Name(), mirror.DefaultPrefix) {
		t.Fatalf("name %q should say the folder and the default prefix", f.Name())
	}
	cfg := mirror.Config{Bucket: "b-1", Endpoint: "https://acct.r2.cloudflarestorage.com", AccessKeyID: "AKID", SecretAccessKey: "sekrit"}
	s, err := mirror.New(ctx, cfg)
	if _, ok := s.(*mirror.S3); !ok || err != nil {
		t.Fatalf("New(bucket) = %T, %v", s, err)
	}
	if name := s.Name(); !strings.Contains(name, "b-1") || !strings.Contains(name, "r2.cloudflarestorage.com") || strings.Contains(name, "sekrit") || strings.Contains(name, "AKID") {
		t.Fatalf("name %q", name)
	}
	if _, err := mirror.New(ctx, mirror.Config{}); !errors.Is(err, policy.ErrConfig) {
		t.Fatalf("New(off) = %v, want ErrConfig", err)
	}
	if _, err := mirror.New(ctx, mirror.Config{Dir: dir, Bucket: "b-1"}); !errors.Is(err, policy.ErrConfig) {
		t.Fatalf("New(both) = %v, want ErrConfig", err)
	}
	if (mirror.Config{}).KeyPrefix() != "policies/" || (mirror.Config{Prefix: "kb/"}).KeyPrefix() != "kb/" {
		t.Fatal("KeyPrefix")
	}
	if (mirror.Config{}).Enabled() || !(mirror.Config{Dir: dir}).Enabled() || !cfg.Enabled() {
		t.Fatal("Enabled")
	}
}

func TestNewS3_ValidatesItsSettings(t *testing.T) {
	t.Parallel()
	for _, cfg := range []mirror.Config{
		{Dir: t.TempDir()},
		{Bucket: "b-1", Endpoint: "https://id:hunter2@host"},
	} {
		_, err := mirror.NewS3(context.Background(), cfg)
		if !errors.Is(err, policy.ErrConfig) || strings.Contains(fmt.Sprint(err), "hunter2") {
			t.Fatalf("NewS3(%+v) = %v, want a configuration error without the secret", cfg.Dir, err)
		}
	}
}
