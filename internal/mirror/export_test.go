package mirror

import "context"

// WithPageSize sets the keys per list page, to exercise pagination.
func WithPageSize(c Config, n int) Config { c.pageSize = n; return c }

// NewS3WithSDKChecksums builds an S3 target that keeps the SDK's default
// checksums and sends no Content-MD5, as a naive client would: the control
// that shows the trailer test can fail.
func NewS3WithSDKChecksums(ctx context.Context, cfg Config) (*S3, error) {
	return newS3(ctx, cfg, true)
}

// TranslateFS is translateFS, for the errors no test folder can produce.
var TranslateFS = translateFS
