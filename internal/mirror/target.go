package mirror

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/knue/syncjob/internal/policy"
)

// Sentinel errors of a Target. A Target returns them wrapped, with the
// operation and the key: "s3: put policies/a/policy.md: unavailable: 503
// InternalError". Test with errors.Is.
var (
	// ErrNotFound: the bucket does not exist. It also matches
	// policy.ErrConfig: the settings name something absent.
	ErrNotFound error = &configError{"bucket not found"}
	// ErrAccessDenied: the store refused the credentials or the operation
	// (401, 403, a folder without permission). Not retried. It also
	// matches policy.ErrConfig.
	ErrAccessDenied error = &configError{"access denied"}
	// ErrWrongRegion: the bucket answers from another region than the one
	// asked (301 PermanentRedirect and the like). It also matches
	// policy.ErrConfig: CONTENT_REGION must name the bucket's.
	ErrWrongRegion error = &configError{"bucket in another region"}
	// ErrUnavailable: the store answered 5xx, throttled, timed out or could
	// not be reached, and kept doing so through the in-call retries.
	ErrUnavailable = errors.New("unavailable")
	// ErrRejected: the store refused the request for another reason (a 4xx
	// other than the above); retrying the same request will not help.
	ErrRejected = errors.New("rejected")
	// ErrOutsidePrefix: a key is not a valid key under the target's prefix.
	// No request is made for it.
	ErrOutsidePrefix = errors.New("key outside the mirror prefix")
)

// configError is a sentinel that also matches policy.ErrConfig.
type configError struct{ msg string }

func (e *configError) Error() string        { return e.msg }
func (e *configError) Is(target error) bool { return target == policy.ErrConfig }

// DefaultPrefix is the prefix of every key unless CONTENT_PREFIX says
// otherwise: the layout of the job syncjob replaces.
const DefaultPrefix = "policies/"

// ObjectName is the last segment of every policy's key.
const ObjectName = "policy.md"

// MaxDeleteBatch is the most keys one S3 DeleteObjects request takes.
const MaxDeleteBatch = 1000

// Object is one rendered object, ready for Target.Put. Build it with Render.
type Object struct {
	Key         string
	Body        []byte
	ContentType string
	// Metadata holds the custom metadata, names lowercase without the
	// x-amz-meta- prefix, values already header-safe (EncodeHeader).
	Metadata map[string]string
}

// Listed is one object of a listing.
type Listed struct {
	Key  string
	ETag string // lowercase hex, without quotes (NormalizeETag)
	Size int64
}

// Target is where the mirror is kept: a bucket or a folder. Every key it
// takes must be under its prefix (ValidateKey); it never reads, writes or
// deletes anything else. Safe for concurrent use.
type Target interface {
	// Name says what the target is for status lines ("s3 bucket
	// policies-prod at https://acct.r2.cloudflarestorage.com, prefix
	// policies/"); it never holds a credential.
	Name() string
	// Put stores o whole (a reader never sees part of it) and returns its
	// ETag, lowercase hex without quotes: ETagOf(o.Body) for a single-part
	// upload. Errors: ErrOutsidePrefix (before any request), ErrAccessDenied,
	// ErrNotFound, ErrUnavailable (after the in-call retries), ErrRejected.
	Put(ctx context.Context, o Object) (etag string, err error)
	// Delete removes the keys, a missing one counting as deleted, S3 in
	// batches of at most MaxDeleteBatch. perKey holds an error for every key
	// not known to be deleted: refused by the store inside a 200 answer, or
	// in a batch whose request failed; every other key is gone. err is
	// non-nil when a request failed as a whole (ErrAccessDenied, ErrNotFound,
	// ErrUnavailable, ErrRejected), or, with no request made, when a key is
	// outside the prefix (ErrOutsidePrefix).
	Delete(ctx context.Context, keys []string) (perKey map[string]error, err error)
	// List returns every object under the prefix, sorted by key, without
	// reading any object (the folder reads files to hash them). Errors:
	// ErrAccessDenied, ErrNotFound, ErrUnavailable, ErrRejected.
	List(ctx context.Context) ([]Listed, error)
	// Stats returns what the target has done so far, for the run summary.
	Stats() Stats
}

// Stats counts a target's work: requests by operation (every try, retries
// included; for a folder, files written, removed and listings), and the
// bytes of the objects stored.
type Stats struct {
	Puts, Deletes, Lists int64
	BytesUploaded        int64
}

// counters is Stats, safe for concurrent use.
type counters struct {
	puts, deletes, lists, bytes atomic.Int64
}

func (c *counters) stats() Stats {
	return Stats{Puts: c.puts.Load(), Deletes: c.deletes.Load(), Lists: c.lists.Load(), BytesUploaded: c.bytes.Load()}
}

// ValidatePrefix checks a prefix: non-empty, ending in "/", relative, with
// no empty, "." or ".." segment and valid UTF-8. A mirror never owns a
// whole bucket or folder.
func ValidatePrefix(prefix string) error {
	if prefix == "" || !strings.HasSuffix(prefix, "/") || strings.HasPrefix(prefix, "/") {
		return fmt.Errorf("prefix %q must be a folder-like path ending in \"/\", such as %q", prefix, DefaultPrefix)
	}
	if err := validPath(strings.TrimSuffix(prefix, "/")); err != nil {
		return fmt.Errorf("prefix %q: %w", prefix, err)
	}
	return nil
}

// ValidateKey checks that key lies under prefix and is a plain relative
// path there (no empty, "." or ".." segment, no backslash or NUL), so
// neither a bucket nor a folder target can be led outside the prefix. The
// error wraps ErrOutsidePrefix.
func ValidateKey(prefix, key string) error {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok || rest == "" {
		return fmt.Errorf("key %q: %w %q", key, ErrOutsidePrefix, prefix)
	}
	if err := validPath(rest); err != nil {
		return fmt.Errorf("key %q: %w: %w", key, ErrOutsidePrefix, err)
	}
	return nil
}

// validateObject checks an object before it is stored: its key is under
// prefix (ErrOutsidePrefix), and its metadata names and values are
// printable ASCII, as HTTP headers must be (ErrRejected: Render encodes
// them so).
func validateObject(prefix string, o Object) error {
	if err := ValidateKey(prefix, o.Key); err != nil {
		return err
	}
	for k, v := range o.Metadata {
		if k == "" || !printableASCII(k) || !printableASCII(v) {
			return fmt.Errorf("object %s: metadata %q: %w: not printable ASCII (use EncodeHeader)", o.Key, k, ErrRejected)
		}
	}
	return nil
}

func printableASCII(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] < ' ' || v[i] > '~' {
			return false
		}
	}
	return true
}

// validPath checks a slash-separated relative path.
func validPath(p string) error {
	if !utf8.ValidString(p) || strings.ContainsAny(p, "\\\x00") {
		return errors.New("invalid UTF-8, backslash or NUL")
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return errors.New(`empty, "." or ".." segment`)
		}
	}
	return nil
}

// NormalizeETag returns an ETag as Target reports it: without the quotes
// S3 puts around it, lowercase.
func NormalizeETag(etag string) string {
	return strings.ToLower(strings.Trim(strings.TrimSpace(etag), `"`))
}
