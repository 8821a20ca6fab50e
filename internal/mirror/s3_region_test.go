package mirror_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/policy"
)

// hosts answers every request 200 with an empty listing, noting its host.
type hosts struct {
	mu   sync.Mutex
	seen []string
}

func (h *hosts) RoundTrip(req *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.seen = append(h.seen, req.URL.Host)
	h.mu.Unlock()
	body := `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>policies-prod</Name><IsTruncated>false</IsTruncated></ListBucketResult>`
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/xml"}}, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// awsEnv is the environment of a Lambda on AWS S3 with its role's keys:
// no shared files, region as given ("" unset).
func awsEnv(t *testing.T, region string) {
	t.Setenv("AWS_CA_BUNDLE", "")
	t.Setenv("AWS_REGION", region)
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAROLE000000000000")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "role-secret")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
}

// On AWS S3 (no CONTENT_ENDPOINT, the function's role; infra/README.md,
// the template passing CONTENT_REGION=auto, its default) "auto" is R2's
// region, not AWS's: the SDK sent every request to
// policies-prod.s3.auto.amazonaws.com, a name that does not resolve, and
// every run failed "unavailable" (exit 1) never naming CONTENT_REGION
// (review). Without an endpoint, auto is AWS's own region chain: the
// Lambda's AWS_REGION.
func TestNewS3_AWSS3DefaultRegionAuto_TakesAWSRegion(t *testing.T) {
	awsEnv(t, "ap-northeast-2")
	h := &hosts{}
	cfg := mirror.Config{Bucket: "policies-prod", HTTPClient: &http.Client{Transport: h}} // as the template configures AWS S3
	if err := cfg.Validate(); err != nil {
		if !errors.Is(err, policy.ErrConfig) || !strings.Contains(err.Error(), "CONTENT_REGION") {
			t.Fatalf("refused, but not naming CONTENT_REGION: %v", err)
		}
		return
	}
	s, err := mirror.NewS3(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, host := range h.seen {
		if strings.Contains(host, ".auto.") {
			t.Errorf("request sent to %s: AWS has no region \"auto\"", host)
		}
	}
	if len(h.seen) == 0 || !strings.Contains(h.seen[0], "ap-northeast-2") {
		t.Errorf("requests sent to %q; want the Lambda's region ap-northeast-2", h.seen)
	}
}

// The same with the bucket's own keys (CONTENT_ACCESS_KEY_ID): auto
// without an endpoint is AWS_REGION too, and an explicit region wins.
func TestNewS3_AWSS3StaticKeys_RegionAutoTakesAWSRegion_ExplicitWins(t *testing.T) {
	awsEnv(t, "eu-west-1")
	for region, want := range map[string]string{"": "eu-west-1", "auto": "eu-west-1", "us-east-2": "us-east-2"} {
		h := &hosts{}
		cfg := mirror.Config{Bucket: "policies-prod", Region: region, AccessKeyID: "AKIAX", SecretAccessKey: "s", HTTPClient: &http.Client{Transport: h}}
		if _, err := mustS3(t, cfg).List(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(h.seen) == 0 || !strings.Contains(h.seen[0], want) {
			t.Errorf("CONTENT_REGION %q: requests sent to %q; want %s", region, h.seen, want)
		}
	}
}

// On AWS S3 with no region anywhere (CONTENT_REGION auto, no AWS_REGION
// nor profile), no bucket can be reached: a configuration error naming
// CONTENT_REGION, before any request.
func TestNewS3_AWSS3NoRegionAnywhere_ConfigErrorNamingContentRegion(t *testing.T) {
	awsEnv(t, "")
	for _, keys := range []bool{false, true} {
		h := &hosts{}
		cfg := mirror.Config{Bucket: "policies-prod", Region: mirror.DefaultRegion, HTTPClient: &http.Client{Transport: h}}
		if keys {
			cfg.AccessKeyID, cfg.SecretAccessKey = "AKIAX", "the-secret"
		}
		_, err := mirror.NewS3(context.Background(), cfg)
		if !errors.Is(err, policy.ErrConfig) || !strings.Contains(fmt.Sprint(err), "CONTENT_REGION") {
			t.Errorf("keys %v: NewS3 = %v; want a configuration error naming CONTENT_REGION", keys, err)
		}
		if len(h.seen) > 0 {
			t.Errorf("keys %v: requests sent: %q", keys, h.seen)
		}
	}
}

// AWS_PROFILE naming a profile the shared files do not have (a typo, or
// a laptop's profile on a machine without it) is the operator's setting
// to fix, as CONTENT_REGION is: exit 2 naming it, not exit 1 as if the
// store were down (review).
func TestNewS3_ProfileNotInTheSharedFiles_ConfigErrorNamingAWSProfile(t *testing.T) {
	awsEnv(t, "")
	t.Setenv("AWS_PROFILE", "polices-prod") // misspelt
	cfg := mirror.Config{Bucket: "policies-prod", HTTPClient: &http.Client{Transport: &hosts{}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	_, err := mirror.NewS3(context.Background(), cfg)
	if !errors.Is(err, policy.ErrConfig) {
		t.Fatalf("err = %v; want a configuration error", err)
	}
	for _, want := range []string{"AWS_PROFILE", "polices-prod"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v; want it to name %s", err, want)
		}
	}
}

// sameToken answers every listing with one key, "truncated", and the same
// continuation token: a store that would be listed for ever.
type sameToken struct{ lists int }

func (s *sameToken) RoundTrip(req *http.Request) (*http.Response, error) {
	s.lists++
	body := `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>policies-prod</Name><Prefix>policies/</Prefix><KeyCount>1</KeyCount>` +
		`<IsTruncated>true</IsTruncated><NextContinuationToken>again</NextContinuationToken>` +
		`<Contents><Key>policies/a.md</Key><ETag>"e"</ETag><Size>1</Size></Contents></ListBucketResult>`
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/xml"}}, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// TestS3_List_ContinuationTokenRepeated_Error: a store that gives the same
// continuation token again is an error, not a listing that never ends (an
// adversarial helper's note: only a page without a token was checked).
func TestS3_List_ContinuationTokenRepeated_Error(t *testing.T) {
	awsEnv(t, "ap-northeast-2")
	rt := &sameToken{}
	s, err := mirror.NewS3(context.Background(), mirror.Config{Bucket: "policies-prod", Region: "ap-northeast-2", HTTPClient: &http.Client{Transport: rt}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := s.List(context.Background()); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, mirror.ErrRejected) || !strings.Contains(err.Error(), "came twice") {
			t.Errorf("List = %v; want the repeated token named", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("List still going after 10 s (%d pages)", rt.lists)
	}
}
