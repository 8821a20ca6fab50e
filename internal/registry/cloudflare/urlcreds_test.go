package cloudflare_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare"
)

const (
	cfURLUser     = "bob-url-user"
	cfURLPassword = "p4ss-url-secret"
)

func TestStore_URLCredentials_NeverInErrorsOrLogs(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	// A transport that fails every request and echoes its URL, as some do.
	failing := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return nil, fmt.Errorf("dial %s: connection refused", r.URL)
	})
	s, err := cloudflare.New(cloudflare.Config{
		AccountID: "acc", NamespaceID: "ns", APIToken: secretToken,
		BaseURL:    "https://" + cfURLUser + ":" + cfURLPassword + "@cloudflare.example.invalid/client/v4",
		HTTPClient: &http.Client{Transport: failing},
		Sleep:      func(context.Context, time.Duration) error { return nil },
		MaxRetries: 1,
		Logger:     slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	var texts []string
	note := func(err error) {
		if err == nil {
			t.Error("no error from a transport that fails")
			return
		}
		texts = append(texts, err.Error())
	}
	_, err = s.Get(ctx, "policy:a")
	note(err)
	_, err = s.List(ctx, "policy:")
	note(err)
	_, err = s.GetMany(ctx, []string{registry.LastRunKey})
	note(err)
	note(s.Put(ctx, []registry.Pair{{Key: "policy:a", Value: []byte("a")}})["policy:a"])
	note(s.Delete(ctx, []string{"policy:a"})["policy:a"])
	texts = append(texts, logs.String())
	if !strings.Contains(logs.String(), "retrying cloudflare request") {
		t.Errorf("logs do not show the retries:\n%s", logs.String())
	}
	for _, text := range texts {
		for _, secret := range []string{cfURLUser, cfURLPassword, secretToken} {
			if strings.Contains(text, secret) {
				t.Errorf("%q shows %q", text, secret)
			}
		}
	}
}

func TestNew_BadBaseURL_ConfigErrorWithoutCredentials(t *testing.T) {
	t.Parallel()
	_, err := cloudflare.New(cloudflare.Config{AccountID: "a", NamespaceID: "n", APIToken: "t",
		BaseURL: "ftp://" + cfURLUser + ":" + cfURLPassword + "@host/client/v4"})
	if !errors.Is(err, policy.ErrConfig) || !strings.Contains(err.Error(), "BaseURL") {
		t.Fatalf("New = %v, want a config error naming BaseURL", err)
	}
	if strings.Contains(err.Error(), cfURLUser) || strings.Contains(err.Error(), cfURLPassword) {
		t.Errorf("error %q shows the URL's credentials", err)
	}
}
