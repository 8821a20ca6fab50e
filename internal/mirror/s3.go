package mirror

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/redact"
	"github.com/knue/syncjob/internal/retry"
)

// Defaults of the S3 target.
const (
	// DefaultRegion is R2's region; without an endpoint (AWS S3) it
	// means AWS's own region chain (awsConfig).
	DefaultRegion     = "auto"
	DefaultMaxRetries = 4
	DefaultTryTimeout = 30 * time.Second
	defaultPageSize   = 1000
	// maxIdleConnsPerHost keeps a connection for each concurrent upload
	// (Go's default keeps 2, the SDK's 10): without it, a run uploading 16
	// at a time opens a TLS connection for most requests.
	maxIdleConnsPerHost = 64
	backoffBase         = 200 * time.Millisecond
	backoffMax          = 5 * time.Second
)

// S3 is a Target in an S3-compatible bucket (Cloudflare R2, AWS S3, a
// self-hosted server), through aws-sdk-go-v2. Checksums are computed only
// where an operation requires one (DeleteObjects, which also gets a
// Content-MD5): the SDK's default CRC32 and aws-chunked trailers on uploads
// are turned off, as R2 and other S3-compatible stores mishandle them. A
// PUT carries Content-MD5, so the store refuses a body damaged on the way.
// Each call is retried (bounded, with jitter) on 5xx, throttling, a try
// that outlives its timeout and a request that could not be sent; the SDK's
// own retryer is off.
type S3 struct {
	client   *s3.Client
	bucket   string
	prefix   string
	name     string
	policy   retry.Policy
	timeout  time.Duration
	pageSize int32
	secrets  []string
	noMD5    bool
	count    counters
}

var _ Target = (*S3)(nil)

// NewS3 returns an S3 target for cfg's bucket settings, after Validate
// (errors wrap policy.ErrConfig). It makes no request; with no keys in cfg
// it resolves AWS's default credential chain.
func NewS3(ctx context.Context, cfg Config) (*S3, error) {
	return newS3(ctx, cfg, false)
}

// newS3 builds the target; naive keeps the SDK's default checksums and
// sends no Content-MD5 (the control of the tests that prove the defaults
// are off).
func newS3(ctx context.Context, cfg Config, naive bool) (*S3, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Bucket == "" || cfg.Dir != "" {
		return nil, fmt.Errorf("s3: CONTENT_BUCKET is required: %w", policy.ErrConfig)
	}
	cfg = cfg.withDefaults()
	awsCfg, err := awsConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
			o.UsePathStyle = true
		}
		// Set here, not left to aws.Config: LoadDefaultConfig (the
		// default chain) resolves both to "when supported".
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		if naive {
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenSupported
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenSupported
		}
		o.Retryer = aws.NopRetryer{}
	})
	r := cfg.Rand
	if r == nil {
		r = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	}
	return &S3{
		client: client,
		bucket: cfg.Bucket,
		prefix: cfg.Prefix,
		name:   s3Name(cfg),
		policy: retry.Policy{
			MaxRetries: cfg.MaxRetries,
			Wait:       retry.Jittered(backoffBase, backoffMax, r),
			Classify:   classify,
			Sleep:      cfg.Sleep,
		},
		timeout:  cfg.TryTimeout,
		pageSize: int32(cfg.pageSize),
		secrets:  []string{cfg.AccessKeyID, cfg.SecretAccessKey},
		noMD5:    naive,
	}, nil
}

// awsConfig builds the SDK's configuration: static keys when cfg has them,
// else AWS's default chain (environment, shared files, the Lambda role).
// Without an endpoint (AWS S3) the region auto, R2's, is no AWS region:
// it means AWS's own region chain (AWS_REGION, a Lambda's own), and a
// configuration error naming CONTENT_REGION when that finds none (review:
// the SDK sent every request to BUCKET.s3.auto.amazonaws.com).
func awsConfig(ctx context.Context, cfg Config) (aws.Config, error) {
	var httpClient aws.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.MaxIdleConnsPerHost = maxIdleConnsPerHost
	})
	if cfg.HTTPClient != nil {
		httpClient = cfg.HTTPClient
	}
	region := cfg.Region
	if cfg.Endpoint == "" && region == DefaultRegion {
		region = "" // AWS's chain
	}
	var static aws.CredentialsProvider
	if cfg.AccessKeyID != "" {
		static = aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, ""))
	}
	if static != nil && region != "" {
		return aws.Config{
			Region:      region,
			Credentials: static,
			HTTPClient:  httpClient,
			Retryer:     func() aws.Retryer { return aws.NopRetryer{} },
		}, nil
	}
	opts := []func(*config.LoadOptions) error{config.WithHTTPClient(httpClient)}
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	if static != nil {
		opts = append(opts, config.WithCredentialsProvider(static))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	var noProfile config.SharedConfigProfileNotExistError
	switch {
	case errors.As(err, &noProfile):
		return aws.Config{}, fmt.Errorf("s3: AWS_PROFILE is %q, a profile the AWS shared config files do not have: name one they have, or unset it: %w", noProfile.Profile, policy.ErrConfig)
	case err != nil: // LoadDefaultConfig reads the environment and the shared files (credentials come later, with the first request): the store has no part in it
		return aws.Config{}, fmt.Errorf("s3: load the AWS configuration (AWS_PROFILE, AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE): %v: %w", err, policy.ErrConfig)
	}
	if awsCfg.Region == "" {
		return aws.Config{}, fmt.Errorf("s3: CONTENT_REGION is %s, R2's, and AWS S3 (no CONTENT_ENDPOINT) finds no region of its own (AWS_REGION, the profile): set CONTENT_REGION to the bucket's region: %w", DefaultRegion, policy.ErrConfig)
	}
	return awsCfg, nil
}

func s3Name(cfg Config) string {
	where := "AWS S3"
	if cfg.Endpoint != "" {
		where = redact.String(cfg.Endpoint, cfg.AccessKeyID, cfg.SecretAccessKey)
	}
	return "s3 bucket " + cfg.Bucket + " at " + where + ", prefix " + cfg.Prefix
}

// Name implements Target.
func (s *S3) Name() string { return s.name }

// Stats implements Target.
func (s *S3) Stats() Stats { return s.count.stats() }

// do runs one SDK call under the retry policy, each try bounded by the try
// timeout, and translates its error.
func do[T any](ctx context.Context, s *S3, tries *atomic.Int64, call func(ctx context.Context) (T, error)) (T, error) {
	v, err := retry.Do(ctx, s.policy, func(ctx context.Context) (T, error) {
		tries.Add(1)
		tctx, cancel := context.WithTimeoutCause(ctx, s.timeout, errTryTimeout)
		defer cancel()
		v, err := call(tctx)
		if err != nil && ctx.Err() == nil && tctx.Err() != nil {
			return v, fmt.Errorf("%w: %w", errTryTimeout, err)
		}
		return v, err
	})
	if err != nil {
		return v, redact.Error(translate(ctx, err), s.secrets...)
	}
	return v, nil
}

// Put implements Target.
func (s *S3) Put(ctx context.Context, o Object) (string, error) {
	if err := validateObject(s.prefix, o); err != nil {
		return "", fmt.Errorf("s3: put: %w", err)
	}
	var contentType *string
	if o.ContentType != "" {
		contentType = aws.String(o.ContentType)
	}
	var contentMD5 *string
	if !s.noMD5 {
		sum := md5.Sum(o.Body)
		contentMD5 = aws.String(base64.StdEncoding.EncodeToString(sum[:]))
	}
	out, err := do(ctx, s, &s.count.puts, func(ctx context.Context) (*s3.PutObjectOutput, error) {
		return s.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket:        aws.String(s.bucket),
			Key:           aws.String(o.Key),
			Body:          bytes.NewReader(o.Body),
			ContentLength: aws.Int64(int64(len(o.Body))),
			ContentType:   contentType,
			ContentMD5:    contentMD5,
			Metadata:      o.Metadata,
		})
	})
	if err != nil {
		return "", fmt.Errorf("s3: put %s: %w", o.Key, err)
	}
	s.count.bytes.Add(int64(len(o.Body)))
	if etag := NormalizeETag(aws.ToString(out.ETag)); etag != "" {
		return etag, nil
	}
	return ETagOf(o.Body), nil
}

// Delete implements Target. Keys go in batches of MaxDeleteBatch, each a
// quiet DeleteObjects with a Content-MD5; a batch's per-key errors are
// reported per key, not re-sent (the run retries the policy).
func (s *S3) Delete(ctx context.Context, keys []string) (map[string]error, error) {
	for _, k := range keys {
		if err := ValidateKey(s.prefix, k); err != nil {
			return nil, fmt.Errorf("s3: delete: %w", err)
		}
	}
	perKey := map[string]error{}
	var first error
	for batch := range slices.Chunk(keys, MaxDeleteBatch) {
		if err := s.deleteBatch(ctx, batch, perKey); err != nil && first == nil {
			first = err
		}
	}
	return perKey, first
}

// deleteBatch deletes at most MaxDeleteBatch keys, noting in perKey every
// key not deleted.
func (s *S3) deleteBatch(ctx context.Context, batch []string, perKey map[string]error) error {
	ids := make([]types.ObjectIdentifier, len(batch))
	for i, k := range batch {
		ids[i] = types.ObjectIdentifier{Key: aws.String(k)}
	}
	out, err := do(ctx, s, &s.count.deletes, func(ctx context.Context) (*s3.DeleteObjectsOutput, error) {
		return s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
			Bucket: aws.String(s.bucket),
			Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)},
		}, s3.WithAPIOptions(smithyhttp.AddContentChecksumMiddleware))
	})
	if err != nil {
		err = fmt.Errorf("s3: delete %d keys: %w", len(batch), err)
		for _, k := range batch {
			perKey[k] = err
		}
		return err
	}
	for _, e := range out.Errors {
		k := aws.ToString(e.Key)
		if slices.Contains(batch, k) {
			perKey[k] = fmt.Errorf("s3: delete %s: %w", k, keyError(aws.ToString(e.Code)))
		}
	}
	return nil
}

// listedKey is a listed object's key, decoded when the answer says it is
// URL-encoded (a store may ignore the request for it and send keys as
// they are).
func listedKey(key *string, enc types.EncodingType) (string, error) {
	k := aws.ToString(key)
	if enc != types.EncodingTypeUrl {
		return k, nil
	}
	d, err := url.QueryUnescape(k)
	if err != nil {
		return "", fmt.Errorf("%w: a listed key is not URL-encoded as the answer says: %v", ErrRejected, err)
	}
	return d, nil
}

// List implements Target: ListObjectsV2 under the prefix, page by page. A
// page that says it is truncated but gives no continuation token (a store
// that pages otherwise) is followed by the page after its last key
// (start-after); one that gives neither a token nor a key is an error, never
// taken for the end of the listing: a full run would take the objects it
// did not see for missing.
func (s *S3) List(ctx context.Context) ([]Listed, error) {
	var out []Listed
	var token, after *string
	tokens := map[string]bool{} // each continuation token the store gave
	for {
		page, err := do(ctx, s, &s.count.lists, func(ctx context.Context) (*s3.ListObjectsV2Output, error) {
			return s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
				Bucket:            aws.String(s.bucket),
				Prefix:            aws.String(s.prefix),
				ContinuationToken: token,
				StartAfter:        after,
				MaxKeys:           aws.Int32(s.pageSize),
				// keys URL-encoded: a control character in one is an XML
				// character reference Go's XML 1.0 parser refuses, and
				// every listing, so every full run, failed (review)
				EncodingType: types.EncodingTypeUrl,
			})
		})
		if err != nil {
			return nil, fmt.Errorf("s3: list %s: %w", s.prefix, err)
		}
		last := ""
		for _, o := range page.Contents {
			k, err := listedKey(o.Key, page.EncodingType)
			if err != nil {
				return nil, fmt.Errorf("s3: list %s: %w", s.prefix, err)
			}
			if last = k; strings.HasPrefix(k, s.prefix) {
				out = append(out, Listed{Key: k, ETag: NormalizeETag(aws.ToString(o.ETag)), Size: aws.ToInt64(o.Size)})
			}
		}
		if !aws.ToBool(page.IsTruncated) {
			break
		}
		if next := aws.ToString(page.NextContinuationToken); next != "" {
			if tokens[next] { // a store that gives a token twice would be listed for ever
				return nil, fmt.Errorf("s3: list %s: %w: the continuation token %q came twice", s.prefix, ErrRejected, next)
			}
			tokens[next] = true
			token, after = page.NextContinuationToken, nil
			continue
		}
		if last == "" || last <= aws.ToString(after) {
			return nil, fmt.Errorf("s3: list %s: %w: a page says the listing goes on but gives no continuation token nor a key past the last", s.prefix, ErrRejected)
		}
		token, after = nil, aws.String(last)
	}
	slices.SortFunc(out, func(a, b Listed) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}
