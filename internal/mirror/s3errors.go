package mirror

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/knue/syncjob/internal/retry"
)

// errTryTimeout: one try outlived its own timeout while the call's context
// still runs; it is retried.
var errTryTimeout = errors.New("timeout")

// classify retries 5xx, 429, S3's throttling and transient codes, tries
// that timed out, and requests that could not be sent.
func classify(err error) retry.Decision {
	return retry.Decision{Retry: transient(err)}
}

func transient(err error) bool {
	status, code := statusAndCode(err)
	switch {
	case status >= 500 || status == 429:
		return true
	case code == "SlowDown" || code == "InternalError" || code == "ServiceUnavailable" || code == "RequestTimeout":
		return true
	case errors.Is(err, errTryTimeout):
		return true
	}
	var send *smithyhttp.RequestSendError
	var netErr net.Error
	return status == 0 && (errors.As(err, &send) || errors.As(err, &netErr))
}

// statusAndCode returns the HTTP status and S3 error code of an SDK error,
// 0 and "" when it has none.
func statusAndCode(err error) (int, string) {
	var status int
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		return status, api.ErrorCode()
	}
	return status, ""
}

// translate turns an SDK error into a sentinel with a short detail (status
// and S3 code), dropping the SDK's text. The context's own end is kept.
func translate(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
		return err
	}
	if cut := (*retry.PastDeadline)(nil); errors.As(err, &cut) { // kept: the upload waits, counting no failure (review)
		return &retry.PastDeadline{Err: translate(ctx, cut.Err), Wait: cut.Wait}
	}
	status, code := statusAndCode(err)
	detail := code
	if status != 0 {
		detail = strconv.Itoa(status) + " " + code
	}
	switch {
	case errors.Is(err, errTryTimeout):
		return fmt.Errorf("%w: timeout", ErrUnavailable)
	case status == 301 || code == "PermanentRedirect" || code == "AuthorizationHeaderMalformed" || code == "IllegalLocationConstraintException":
		// every request of the run would answer so: configuration, not
		// each object's failure (review: dead letters)
		return fmt.Errorf("%w: %s (CONTENT_REGION must be the bucket's region)", ErrWrongRegion, detail)
	case code == "RequestTimeTooSkewed":
		return fmt.Errorf("%w: %s (this machine's clock is more than 15 minutes off the store's: set it right; the keys are not at fault)", ErrAccessDenied, detail)
	case code == "NoSuchBucket":
		return fmt.Errorf("%w: %s (%s)", ErrNotFound, detail, settingBucket)
	case status == 401 || status == 403 || code == "AccessDenied" || code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch":
		return fmt.Errorf("%w: %s (%s)", ErrAccessDenied, detail, settingKeys)
	case transient(err) && status == 0:
		return fmt.Errorf("%w: request not sent", ErrUnavailable)
	case transient(err):
		return fmt.Errorf("%w: %s", ErrUnavailable, detail)
	case status == 0 && code == "":
		return fmt.Errorf("%w: %v", ErrRejected, err)
	}
	return fmt.Errorf("%w: %s", ErrRejected, detail)
}

// The settings a configuration error of the store names: the run stops
// on it (exit 2), and the operator must know what to fix.
const (
	settingBucket = "CONTENT_BUCKET: no such bucket at the endpoint"
	settingKeys   = "CONTENT_ACCESS_KEY_ID and CONTENT_SECRET_ACCESS_KEY refused, or without them the role's permissions on CONTENT_BUCKET"
)

// keyError translates one per-key error of a DeleteObjects answer.
func keyError(code string) error {
	switch code {
	case "AccessDenied":
		return fmt.Errorf("%w: %s (%s)", ErrAccessDenied, code, settingKeys)
	case "InternalError", "SlowDown", "ServiceUnavailable":
		return fmt.Errorf("%w: %s", ErrUnavailable, code)
	}
	return fmt.Errorf("%w: %s", ErrRejected, code)
}
