package scalebench

import (
	"bytes"
	"context"
	"crypto/md5"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"

	"github.com/knue/syncjob/internal/mirror"
)

// s3Sums is the bench's gofakes3 backend: one bucket whose objects are kept
// as their MD5 and size, not their bytes, so that the bench's own process
// stays small and quick at 200,000 objects (gofakes3's s3mem held 3.9 GB
// and slowed each upload, 28 minutes into a 200,000-policy first sync).
// Listings, ETags, puts and deletes are S3's; a GET answers the object's
// size in zero bytes, which the bench never reads (it counts requests and
// compares listed ETags).
type s3Sums struct {
	bucket  string
	created time.Time
	mu      sync.Mutex
	objects map[string]s3Sum
	sorted  []string // the keys in order; nil once a put or delete changed them
}

type s3Sum struct {
	md5  []byte
	size int64
	meta map[string]string
	at   time.Time
}

var _ gofakes3.Backend = (*s3Sums)(nil)

func newS3Sums(bucket string) *s3Sums {
	return &s3Sums{bucket: bucket, created: time.Now(), objects: map[string]s3Sum{}}
}

func (s *s3Sums) check(bucket string) error {
	if bucket != s.bucket {
		return gofakes3.BucketNotFound(bucket)
	}
	return nil
}

func (s *s3Sums) ListBuckets() ([]gofakes3.BucketInfo, error) {
	return []gofakes3.BucketInfo{{Name: s.bucket, CreationDate: gofakes3.NewContentTime(s.created)}}, nil
}

// ListBucket lists in key order from the page's marker, as s3mem does.
func (s *s3Sums) ListBucket(bucket string, prefix *gofakes3.Prefix, page gofakes3.ListBucketPage) (*gofakes3.ObjectList, error) {
	if err := s.check(bucket); err != nil {
		return nil, err
	}
	if prefix == nil {
		prefix = &gofakes3.Prefix{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sorted == nil {
		s.sorted = slices.Sorted(func(yield func(string) bool) {
			for k := range s.objects {
				if !yield(k) {
					return
				}
			}
		})
	}
	out := gofakes3.NewObjectList()
	i := 0
	if page.Marker != "" {
		i, _ = slices.BinarySearch(s.sorted, page.Marker)
		if i < len(s.sorted) && s.sorted[i] == page.Marker {
			i++
		}
	}
	var match gofakes3.PrefixMatch
	var n int64
	last := ""
	for ; i < len(s.sorted); i++ {
		key := s.sorted[i]
		if !prefix.Match(key, &match) {
			continue
		}
		if match.CommonPrefix {
			if match.MatchedPart == last {
				continue
			}
			out.AddPrefix(match.MatchedPart)
			last = match.MatchedPart
		} else {
			o := s.objects[key]
			out.Add(&gofakes3.Content{Key: key, LastModified: gofakes3.NewContentTime(o.at), ETag: gofakes3.FormatETag(o.md5), Size: o.size})
		}
		n++
		if page.MaxKeys > 0 && n >= page.MaxKeys {
			out.NextMarker = key
			out.IsTruncated = i+1 < len(s.sorted)
			break
		}
	}
	return out, nil
}

func (s *s3Sums) CreateBucket(name string) error {
	return gofakes3.ResourceError(gofakes3.ErrBucketAlreadyExists, name)
}

func (s *s3Sums) BucketExists(name string) (bool, error) { return name == s.bucket, nil }

func (s *s3Sums) DeleteBucket(name string) error {
	return gofakes3.ResourceError(gofakes3.ErrBucketNotEmpty, name)
}

func (s *s3Sums) ForceDeleteBucket(name string) error {
	return gofakes3.ResourceError(gofakes3.ErrBucketNotEmpty, name)
}

func (s *s3Sums) GetObject(bucket, key string, _ *gofakes3.ObjectRangeRequest) (*gofakes3.Object, error) {
	return s.HeadObject(bucket, key)
}

func (s *s3Sums) HeadObject(bucket, key string) (*gofakes3.Object, error) {
	if err := s.check(bucket); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objects[key]
	if !ok {
		return nil, gofakes3.KeyNotFound(key)
	}
	return &gofakes3.Object{Name: key, Metadata: o.meta, Size: o.size, Hash: o.md5, Contents: io.NopCloser(bytes.NewReader(nil))}, nil
}

func (s *s3Sums) DeleteObject(bucket, key string) (gofakes3.ObjectDeleteResult, error) {
	if err := s.check(bucket); err != nil {
		return gofakes3.ObjectDeleteResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.objects[key]; ok {
		delete(s.objects, key)
		s.sorted = nil
	}
	return gofakes3.ObjectDeleteResult{}, nil
}

func (s *s3Sums) PutObject(bucket, key string, meta map[string]string, input io.Reader, size int64, _ *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	if err := s.check(bucket); err != nil {
		return gofakes3.PutObjectResult{}, err
	}
	h := md5.New()
	n, err := io.Copy(h, input)
	if err != nil {
		return gofakes3.PutObjectResult{}, err
	}
	if n != size {
		return gofakes3.PutObjectResult{}, gofakes3.ErrIncompleteBody
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.objects[key]; !ok {
		s.sorted = nil
	}
	s.objects[strings.Clone(key)] = s3Sum{md5: h.Sum(nil), size: n, meta: meta, at: time.Now()}
	return gofakes3.PutObjectResult{}, nil
}

func (s *s3Sums) DeleteMulti(bucket string, keys ...string) (gofakes3.MultiDeleteResult, error) {
	var res gofakes3.MultiDeleteResult
	for _, key := range keys {
		if _, err := s.DeleteObject(bucket, key); err != nil {
			return res, err
		}
		res.Deleted = append(res.Deleted, gofakes3.ObjectID{Key: key})
	}
	return res, nil
}

func (s *s3Sums) CopyObject(_, _, _, _ string, _ map[string]string) (gofakes3.CopyObjectResult, error) {
	return gofakes3.CopyObjectResult{}, gofakes3.ErrNotImplemented
}

// TestS3Sums_ListsPagesETagsAndDeletesAsS3: through the program's own S3
// target, the bench's store lists every object put (2,500: three pages)
// with the MD5 of its bytes as its ETag, in key order, and forgets the
// ones deleted.
func TestS3Sums_ListsPagesETagsAndDeletesAsS3(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s3 := newS3Proxy(t, 0)
	target, err := mirror.NewS3(ctx, mirror.Config{Bucket: s3Bucket, Endpoint: s3.URL(), AccessKeyID: s3AccessKey, SecretAccessKey: s3Secret})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2500
	want := map[string]string{}
	var keys []string
	for i := range n {
		o := mirror.Object{Key: fmt.Sprintf("%s정책 %04d.md", mirror.DefaultPrefix, i), Body: []byte(fmt.Sprintf("본문 %d\n", i))}
		if _, err := target.Put(ctx, o); err != nil {
			t.Fatal(err)
		}
		want[o.Key] = mirror.ETagOf(o.Body)
		keys = append(keys, o.Key)
	}
	if perKey, err := target.Delete(ctx, keys[:10]); err != nil || len(perKey) != 0 {
		t.Fatalf("delete: %v %v", perKey, err)
	}
	for _, k := range keys[:10] {
		delete(want, k)
	}
	listed, err := target.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, l := range listed {
		got[l.Key] = mirror.NormalizeETag(l.ETag)
	}
	if len(got) != n-10 || !slices.IsSortedFunc(listed, func(a, b mirror.Listed) int { return strings.Compare(a.Key, b.Key) }) {
		t.Fatalf("listed %d (sorted: %v), want %d in key order", len(got), slices.IsSortedFunc(listed, func(a, b mirror.Listed) int { return strings.Compare(a.Key, b.Key) }), n-10)
	}
	for k, etag := range want {
		if mirror.NormalizeETag(got[k]) != mirror.NormalizeETag(etag) {
			t.Errorf("%s: listed ETag %q, want %q", k, got[k], etag)
		}
	}
	if kinds, _ := s3.take(); kinds["list"] < 3 {
		t.Errorf("%d list requests, want three pages of at most 1,000", kinds["list"])
	}
}
