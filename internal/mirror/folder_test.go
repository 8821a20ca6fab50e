package mirror_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/policy"
)

func mustFolder(t *testing.T) (*mirror.Folder, string) {
	t.Helper()
	dir := t.TempDir()
	f, err := mirror.NewFolder(dir, mirror.DefaultPrefix)
	if err != nil {
		t.Fatal(err)
	}
	return f, dir
}

// A reader never sees part of a file, however often it is replaced.
func TestFolder_Put_ReaderSeesOldOrNewNeverPart(t *testing.T) {
	t.Parallel()
	f, dir := mustFolder(t)
	ctx := context.Background()
	small := mirror.Object{Key: mirror.Key(mirror.DefaultPrefix, "a"), Body: []byte("small")}
	large := mirror.Object{Key: small.Key, Body: bytes.Repeat([]byte("large body "), 20000)}
	if _, err := f.Put(ctx, small); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, small.Key)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var torn []int
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			b, err := os.ReadFile(path)
			if err != nil || (!bytes.Equal(b, small.Body) && !bytes.Equal(b, large.Body)) {
				torn = append(torn, len(b))
			}
		}
	})
	for i := range 200 {
		o := small
		if i%2 == 0 {
			o = large
		}
		if _, err := f.Put(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if len(torn) > 0 {
		t.Fatalf("a reader saw %d torn or missing files (lengths %v)", len(torn), torn[:min(5, len(torn))])
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("left beside the file: %v", entries)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, want 0644", st.Mode().Perm())
	}
}

func TestFolder_Delete_RemovesEmptyFoldersUnderThePrefixOnly(t *testing.T) {
	t.Parallel()
	f, dir := mustFolder(t)
	ctx := context.Background()
	keep := mirror.Key(mirror.DefaultPrefix, "keep")
	nested := mirror.DefaultPrefix + "deep/er/policy.md"
	for _, k := range []string{keep, nested, mirror.DefaultPrefix + "deep/other.txt"} {
		mustWriteFile(t, filepath.Join(dir, k), []byte("x"))
	}
	if perKey, err := f.Delete(ctx, []string{keep, nested}); err != nil || len(perKey) != 0 {
		t.Fatalf("delete: %v %v", err, perKey)
	}
	assertExists(t, filepath.Join(dir, mirror.DefaultPrefix, "deep", "other.txt"), true)
	assertExists(t, filepath.Join(dir, mirror.DefaultPrefix, "deep", "er"), false)
	assertExists(t, filepath.Join(dir, mirror.DefaultPrefix, "keep"), false)
	if _, err := f.Delete(ctx, []string{mirror.DefaultPrefix + "deep/other.txt"}); err != nil {
		t.Fatal(err)
	}
	assertExists(t, filepath.Join(dir, mirror.DefaultPrefix, "deep"), false)
	assertExists(t, filepath.Join(dir, mirror.DefaultPrefix), true)
}

func assertExists(t *testing.T, path string, want bool) {
	t.Helper()
	_, err := os.Lstat(path)
	if got := err == nil; got != want {
		t.Fatalf("%s exists = %v, want %v", path, got, want)
	}
}

func TestFolder_List_NothingMirroredYet(t *testing.T) {
	t.Parallel()
	f, _ := mustFolder(t)
	if l, err := f.List(context.Background()); err != nil || len(l) != 0 {
		t.Fatalf("list of a folder never written: %v, %v", l, err)
	}
}

// A folder mirror where a file is, or where a file stands in the way of
// making the folder, is wrong configuration naming CONTENT_DIR (review);
// a folder that does not exist yet is made at the first put.
func TestNewFolder_AFileInTheWay_ConfigErrorNamingContentDir(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	file := filepath.Join(base, "not-a-folder")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{file, filepath.Join(file, "below")} {
		_, err := mirror.NewFolder(dir, "policies/")
		var ce *policy.ConfigError
		if !errors.As(err, &ce) || ce.Setting != "CONTENT_DIR" || !strings.Contains(err.Error(), file) {
			t.Errorf("NewFolder(%s): %v; want a configuration error naming CONTENT_DIR and the file", dir, err)
		}
	}
	if _, err := mirror.NewFolder(filepath.Join(base, "new", "mirror"), "policies/"); err != nil {
		t.Errorf("a folder to be made: %v", err)
	}
}

// A symlink under the prefix is foreign: listed without an ETag, deleted
// as a link (its target is not followed).
func TestFolder_Symlink_ListedAsForeign_TargetUntouched(t *testing.T) {
	t.Parallel()
	f, dir := mustFolder(t)
	outside := filepath.Join(t.TempDir(), "secret.md")
	mustWriteFile(t, outside, []byte("outside"))
	link := mirror.Key(mirror.DefaultPrefix, "link")
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, link)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, link)); err != nil {
		t.Skip("no symlinks here:", err)
	}
	l, err := f.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]mirror.Listed{{Key: link}}, l); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	r := mirror.Drift(mirror.DefaultPrefix, map[string]mirror.Want{"link": {SHA: "s", UploadedSHA: "s", ETag: "e"}}, l)
	if len(r.Upload) != 1 || r.Upload[0].Reason != mirror.Edited {
		t.Fatalf("drift %+v, want the link replaced by an upload", r)
	}
	if _, err := f.Delete(context.Background(), []string{link}); err != nil {
		t.Fatal(err)
	}
	assertExists(t, outside, true)
}

// A folder under the prefix that is a symlink leads nowhere: a put or a
// delete of a key below it is refused (ErrOutsidePrefix) and what the link
// points to is untouched; the link itself is deleted as a link (review:
// the put wrote through it, outside the prefix).
func TestFolder_SymlinkedFolder_PutAndDeleteBelowItRefused(t *testing.T) {
	t.Parallel()
	f, dir := mustFolder(t)
	outside := t.TempDir()
	kept := filepath.Join(outside, "policy.md")
	mustWriteFile(t, kept, []byte("not ours"))
	link := filepath.Join(dir, filepath.FromSlash(mirror.DefaultPrefix), "가")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	o, err := mirror.Render(mirror.DefaultPrefix, mirror.Doc{PolicyName: "가", Content: []byte("# 가\n")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Put(context.Background(), o); !errors.Is(err, mirror.ErrOutsidePrefix) {
		t.Errorf("put below a symlinked folder: %v, want ErrOutsidePrefix", err)
	}
	perKey, err := f.Delete(context.Background(), []string{o.Key})
	if err != nil || !errors.Is(perKey[o.Key], mirror.ErrOutsidePrefix) {
		t.Errorf("delete below a symlinked folder: %v, %v; want ErrOutsidePrefix for the key", perKey, err)
	}
	if b, _ := os.ReadFile(kept); string(b) != "not ours" {
		t.Errorf("the file the link points to was changed: %q", b)
	}
	if perKey, err := f.Delete(context.Background(), []string{mirror.DefaultPrefix + "가"}); err != nil || perKey[mirror.DefaultPrefix+"가"] != nil {
		t.Fatalf("delete the link: %v, %v", perKey, err)
	}
	assertExists(t, kept, true)
	if _, err := f.Put(context.Background(), o); err != nil {
		t.Errorf("put once the link is gone: %v", err)
	}
}

// The prefix's folder itself may be a symlink (the operator's choice, as
// the dir may be): puts go through it (review: a check from the dir
// refused every put).
func TestFolder_PrefixFolderIsASymlink_PutsGoThrough(t *testing.T) {
	t.Parallel()
	dir, volume := t.TempDir(), t.TempDir()
	if err := os.Symlink(volume, filepath.Join(dir, strings.TrimSuffix(mirror.DefaultPrefix, "/"))); err != nil {
		t.Fatal(err)
	}
	f, err := mirror.NewFolder(dir, mirror.DefaultPrefix)
	if err != nil {
		t.Fatal(err)
	}
	o, err := mirror.Render(mirror.DefaultPrefix, mirror.Doc{PolicyName: "가", Content: []byte("# 가\n")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Put(context.Background(), o); err != nil {
		t.Fatalf("put under a symlinked prefix folder: %v", err)
	}
	assertExists(t, filepath.Join(volume, "가", "policy.md"), true)
	// and List walks where the link leads (review: it listed the link
	// itself, so every full run took every object for missing)
	got, err := f.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Key != o.Key || got[0].ETag != mirror.ETagOf(o.Body) {
		t.Errorf("List = %+v; want the one object put, %s", got, o.Key)
	}
}

func TestFolder_PermissionDenied_IsAccessDenied(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("root ignores permissions")
	}
	f, dir := mustFolder(t)
	if err := os.Mkdir(filepath.Join(dir, mirror.DefaultPrefix), 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(dir, mirror.DefaultPrefix), 0o755) })
	o, _ := mirror.Render(mirror.DefaultPrefix, mirror.Doc{PolicyName: "a"})
	_, err := f.Put(context.Background(), o)
	if !errors.Is(err, mirror.ErrAccessDenied) || !strings.Contains(err.Error(), o.Key) {
		t.Fatalf("put into a read-only folder: %v, want ErrAccessDenied naming the key", err)
	}
}

// A folder that takes no write at all is the store's failure, not each
// policy's: a read-only mount (a Lambda's CONTENT_DIR outside /tmp) is a
// configuration error naming CONTENT_DIR, a full disk, a quota or an I/O
// error is the store unavailable. Review: both passed through as they were,
// the run took every upload's failure for its policy's own, and the third
// run dead-lettered every policy it touched, as S3 down once did.
func TestTranslateFS_StoreFailures_ConfigOrUnavailable(t *testing.T) {
	t.Parallel()
	for errno, want := range map[syscall.Errno]error{
		syscall.EROFS:  policy.ErrConfig,
		syscall.ENOSPC: mirror.ErrUnavailable,
		syscall.EDQUOT: mirror.ErrUnavailable,
		syscall.EIO:    mirror.ErrUnavailable,
		syscall.EACCES: policy.ErrConfig,
	} {
		err := mirror.TranslateFS(&fs.PathError{Op: "open", Path: "/srv/policies/x/policy.md", Err: errno})
		if !errors.Is(err, want) || !errors.Is(err, errno) {
			t.Errorf("%v: %v; want %v, the cause kept", errno, err, want)
		}
		if errors.Is(want, policy.ErrConfig) && !strings.Contains(err.Error(), "CONTENT_DIR") {
			t.Errorf("%v: %v; want CONTENT_DIR named", errno, err)
		}
	}
	if err := mirror.TranslateFS(fs.ErrNotExist); errors.Is(err, mirror.ErrUnavailable) || errors.Is(err, policy.ErrConfig) {
		t.Errorf("a missing file: %v; want it as it was", err)
	}
}

// The temporary files a killed write leaves are not objects: List skips
// them; a put of their key, or its delete, removes them (so its folder goes
// too); a foreign file of another shape is still listed.
func TestFolder_DebrisOfAKilledWrite_NotListed_RemovedByPutAndDelete(t *testing.T) {
	t.Parallel()
	f, dir := mustFolder(t)
	ctx := context.Background()
	a, b := mirror.Key(mirror.DefaultPrefix, "a"), mirror.Key(mirror.DefaultPrefix, "b")
	debrisA := filepath.Join(dir, mirror.DefaultPrefix, "a", ".policy.md.tmp-123")
	debrisB := filepath.Join(dir, mirror.DefaultPrefix, "b", ".policy.md.tmp-456")
	foreign := filepath.Join(dir, mirror.DefaultPrefix, "b", ".policy.md.tmp-x")
	foreign2 := filepath.Join(dir, mirror.DefaultPrefix, "b", ".notes.tmp-1")          // review: another file's shape
	foreign3 := filepath.Join(dir, mirror.DefaultPrefix, ".policy.md.tmp-1")           // review: not beside an object
	foreign4 := filepath.Join(dir, mirror.DefaultPrefix, "c", "d", ".policy.md.tmp-1") // nor deeper
	for _, p := range []string{debrisA, debrisB, foreign, foreign2, foreign3, foreign4} {
		mustWriteFile(t, p, []byte("half"))
	}
	mustWriteFile(t, filepath.Join(dir, b), []byte("b"))
	l, err := f.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, x := range l {
		keys = append(keys, x.Key)
	}
	if want := []string{mirror.DefaultPrefix + ".policy.md.tmp-1", mirror.DefaultPrefix + "b/.notes.tmp-1", mirror.DefaultPrefix + "b/.policy.md.tmp-x", b, mirror.DefaultPrefix + "c/d/.policy.md.tmp-1"}; !slices.Equal(keys, want) {
		t.Errorf("listed %q, want %q", keys, want)
	}
	if _, err := f.Put(ctx, mirror.Object{Key: a, Body: []byte("a")}); err != nil {
		t.Fatal(err)
	}
	assertExists(t, debrisA, false)
	if _, err := f.Delete(ctx, []string{b, mirror.DefaultPrefix + "b/.policy.md.tmp-x", mirror.DefaultPrefix + "b/.notes.tmp-1"}); err != nil {
		t.Fatal(err)
	}
	assertExists(t, filepath.Join(dir, mirror.DefaultPrefix, "b"), false)
}
