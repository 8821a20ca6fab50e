package syncer_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/mirror/mirrortest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/syncer"
)

const prefix = mirror.DefaultPrefix

// withMirror gives the rig a content mirror.
func (r *rig) withMirror(t mirror.Target) *rig {
	r.s.Mirror, r.s.MirrorPrefix = t, prefix
	return r
}

// syncedMirroredRig is syncedRig with a content mirror in memory.
func syncedMirroredRig(t *testing.T) (*rig, *mirrortest.Memory) {
	t.Helper()
	m := mirrortest.NewMemory(prefix)
	r := newRig(t).withMirror(m)
	r.seed()
	r.mustRun()
	return r, m
}

// mirrored is what a target holds under the prefix: policy name → the
// front matter's sha and path, and the file as in git.
type mirrored struct{ SHA, Path, Content string }

func mustMirrored(t *testing.T, target mirror.Target, read func(key string) []byte) map[string]mirrored {
	t.Helper()
	listed, err := target.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]mirrored{}
	for _, l := range listed {
		name, ok := mirror.PolicyNameOf(prefix, l.Key)
		if !ok {
			t.Fatalf("foreign object %s in the mirror", l.Key)
		}
		doc, content, err := mirror.ParseFrontMatter(read(l.Key))
		if err != nil {
			t.Fatalf("%s: %v", l.Key, err)
		}
		if doc.PolicyName != name {
			t.Errorf("%s: front matter names %q", l.Key, doc.PolicyName)
		}
		out[name] = mirrored{SHA: doc.SHA, Path: doc.Path, Content: string(content)}
	}
	return out
}

// headView is what the mirror must hold for the repository's head.
func (r *rig) mirrorWant(files map[string]string) map[string]mirrored {
	want := map[string]mirrored{}
	for path, content := range files {
		want[policy.NameOf(path)] = mirrored{SHA: githubtest.BlobID(content), Path: path, Content: content}
	}
	return want
}

// checkETags: every entry records the ETag of the object the mirror holds.
func (r *rig) checkETags(listed []mirror.Listed) {
	r.t.Helper()
	etags := map[string]string{}
	for _, l := range listed {
		if name, ok := mirror.PolicyNameOf(prefix, l.Key); ok {
			etags[name] = l.ETag
		}
	}
	for name, e := range r.policies() {
		if e.ContentETag == "" || e.ContentETag != etags[name] {
			r.t.Errorf("%s: contentEtag %q, mirror holds %q", name, e.ContentETag, etags[name])
		}
	}
}

func TestMirror_ExactOverHistory_RenamesMovesDeletes(t *testing.T) {
	t.Parallel()
	targets := map[string]func(t *testing.T) (mirror.Target, func(string) []byte){
		"memory": func(t *testing.T) (mirror.Target, func(string) []byte) {
			m := mirrortest.NewMemory(prefix)
			return m, func(key string) []byte { b, _, _ := m.ReadRaw(t, key); return b }
		},
		"folder": func(t *testing.T) (mirror.Target, func(string) []byte) {
			dir := t.TempDir()
			f, err := mirror.NewFolder(dir, prefix)
			if err != nil {
				t.Fatal(err)
			}
			return f, func(key string) []byte {
				b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(key)))
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
		},
	}
	for name, newTarget := range targets {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			target, read := newTarget(t)
			r := newRig(t).withMirror(target)
			files := map[string]string{"a/가.md": "# 가\n", "a/나.md": "# 나\n", "b/다.md": "# 다\n", "c/old.md": "# 옛 이름\n"}
			steps := []func(){
				func() {},
				func() { files["a/가.md"] = "# 가\n\n고침\n" },                                  // update
				func() { files["c/new.md"] = files["c/old.md"]; delete(files, "c/old.md") }, // rename
				func() { files["d/나.md"] = files["a/나.md"]; delete(files, "a/나.md") },       // move
				func() { delete(files, "b/다.md") },                                          // delete
			}
			var committed map[string]string
			for i, step := range steps {
				step()
				sync := func() {
					for p := range committed {
						if _, ok := files[p]; !ok {
							r.repo.Remove(p)
						}
					}
					for p, c := range files {
						if committed[p] != c {
							r.repo.Write(p, c)
						}
					}
					r.repo.Commit("step")
					committed = maps.Clone(files)
				}
				sync()
				if _, err := r.run(syncer.Options{}); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if diff := cmp.Diff(r.mirrorWant(files), mustMirrored(t, target, read)); diff != "" {
					t.Fatalf("step %d: mirror (-want +got):\n%s", i, diff)
				}
				listed, _ := target.List(context.Background())
				r.checkETags(listed)
			}
			if m := r.lastRun().Mirror; m == nil || m.Target != target.Name() || m.Converged == "" {
				t.Errorf("lastRun.mirror = %+v, want the target named and converged", m)
			}
		})
	}
}

func TestMirror_FailedUploadKeepsPolicyUnpublished_Queued(t *testing.T) {
	t.Parallel()
	r, m := syncedMirroredRig(t)
	r.repo.Write("a/가.md", "# 가\n\n새 판\n")
	r.repo.Write("e/라.md", "# 라\n")
	r.repo.Write("a/나.md", "# 나\n\n새 판\n") // its upload lands: the store is up, 가's and 라's failed
	r.repo.Commit("edit and add")
	errDown := errors.New("503 slow down")
	m.FailPut(mirror.Key(prefix, "가"), errDown)
	m.FailPut(mirror.Key(prefix, "라"), errDown)
	before := r.policies()["가"]
	res, err := r.run(syncer.Options{})
	if !errors.Is(err, syncer.ErrPartial) {
		t.Fatalf("run: %v, want partial", err)
	}
	if got := failedNames(res.Summary.Failures); !slices.Equal(got, []string{"가", "라"}) {
		t.Errorf("failures %v, want 가 and 라", got)
	}
	after := r.policies()
	if !cmp.Equal(after["가"], before) {
		t.Errorf("가 published without its text: %+v, was %+v", after["가"], before)
	}
	if _, ok := after["라"]; ok {
		t.Errorf("라 published without its text")
	}
	queue, err := r.reg.Queue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"가", "라"} {
		if q, ok := queue[name]; !ok || q.RetryCount != 1 {
			t.Errorf("queue:%s = %+v; want retryCount 1", name, q)
		}
	}
	m.FailPut(mirror.Key(prefix, "가"), nil)
	m.FailPut(mirror.Key(prefix, "라"), nil)
	if _, err := r.run(syncer.Options{}); err != nil {
		t.Fatalf("retry run: %v", err)
	}
	got := mustMirrored(t, m, func(k string) []byte { b, _, _ := m.ReadRaw(t, k); return b })
	if got["가"].Content != "# 가\n\n새 판\n" || got["라"].Content != "# 라\n" {
		t.Errorf("after the retry the mirror holds %+v", got)
	}
	listed, _ := m.List(context.Background())
	r.checkETags(listed)
}

func TestMirror_KillBetweenUploadAnnouncementValue_NoVersionWithoutText(t *testing.T) {
	t.Parallel()
	for at := 0; at < 4; at++ {
		m := mirrortest.NewMemory(prefix)
		r := newRig(t).withMirror(m)
		r.seed()
		r.mustRun()
		r.repo.Write("a/가.md", "# 가\n\n둘째 판\n")
		r.repo.Write("e/라.md", "# 라\n")
		r.repo.Commit("edit and add")
		r.store.Kill(at)
		_, _ = r.run(syncer.Options{})
		r.store.Revive()
		read := func(k string) []byte { b, _, _ := m.ReadRaw(t, k); return b }
		got := mustMirrored(t, m, read)
		// Every registry version has its text in the mirror, or the text
		// of the head's newer version: the upload comes first, so a kill
		// before the value leaves the object ahead, never behind.
		files := map[string]string{"a/가.md": "# 가\n\n둘째 판\n", "a/나.md": "# 나\n", "b/다.md": "# 다\n", "e/라.md": "# 라\n"}
		head := r.mirrorWant(files)
		for name, e := range r.policies() {
			if o, ok := got[name]; !ok || (o.SHA != e.SHA && o.SHA != head[name].SHA) {
				t.Errorf("kill at %d: %s at %s in the registry, the mirror holds %+v", at, name, e.SHA, o)
			}
		}
		if _, err := r.run(syncer.Options{}); err != nil {
			t.Fatalf("kill at %d: next run: %v", at, err)
		}
		if diff := cmp.Diff(head, mustMirrored(t, m, read)); diff != "" {
			t.Errorf("kill at %d: mirror after the next run (-want +got):\n%s", at, diff)
		}
		listed, _ := m.List(context.Background())
		r.checkETags(listed)
	}
}

func TestMirror_FullRunRepairsEditedMissingForeign_OutsideUntouched(t *testing.T) {
	t.Parallel()
	r, m := syncedMirroredRig(t)
	m.PutRaw(t, mirror.Key(prefix, "가"), []byte("edited by hand"))
	if _, err := m.Delete(context.Background(), []string{mirror.Key(prefix, "나")}); err != nil {
		t.Fatal(err)
	}
	m.PutRaw(t, prefix+"stray/policy.md", []byte("foreign"))
	m.PutRaw(t, prefix+"notes.txt", []byte("foreign too"))
	m.PutRaw(t, "other/keep.md", []byte("not ours"))
	if _, err := r.run(syncer.Options{}); err != nil { // incremental: head unchanged
		t.Fatal(err)
	}
	res, err := r.run(syncer.Options{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	read := func(k string) []byte { b, _, _ := m.ReadRaw(t, k); return b }
	files := map[string]string{"a/가.md": "# 가\n", "a/나.md": "# 나\n", "b/다.md": "# 다\n"}
	if diff := cmp.Diff(r.mirrorWant(files), mustMirrored(t, m, read)); diff != "" {
		t.Errorf("mirror after the full run (-want +got):\n%s", diff)
	}
	if b, _, ok := m.ReadRaw(t, "other/keep.md"); !ok || !bytes.Equal(b, []byte("not ours")) {
		t.Errorf("object outside the prefix touched: %q, %v", b, ok)
	}
	ms := res.Summary.Mirror
	if ms == nil || ms.Repaired != 4 || ms.Uploaded != 2 || ms.Deleted != 2 || ms.LastRepair == "" || ms.Objects != 3 {
		t.Errorf("summary mirror = %+v, want 4 repaired (2 uploads, 2 deletes), 3 objects", ms)
	}
	if res.Summary.Requests["mirror"] == 0 {
		t.Errorf("requests %v, want the mirror's counted", res.Summary.Requests)
	}
}

func TestMirror_TurnedOnForExistingRegistry_FillsIt(t *testing.T) {
	t.Parallel()
	r := syncedRig(t)
	m := mirrortest.NewMemory(prefix)
	r.withMirror(m)
	res := r.mustRun() // the head has not moved
	if res.Summary.Mode != "full" {
		t.Errorf("mode %q, want full: the mirror is new", res.Summary.Mode)
	}
	read := func(k string) []byte { b, _, _ := m.ReadRaw(t, k); return b }
	files := map[string]string{"a/가.md": "# 가\n", "a/나.md": "# 나\n", "b/다.md": "# 다\n"}
	if diff := cmp.Diff(r.mirrorWant(files), mustMirrored(t, m, read)); diff != "" {
		t.Errorf("mirror (-want +got):\n%s", diff)
	}
	listed, _ := m.List(context.Background())
	r.checkETags(listed)
	if res := r.mustRun(); res.Summary.Mode == "full" {
		t.Errorf("the run after the fill is %q again", res.Summary.Mode)
	}
}

func TestMirror_DryRunShowsUploadsWritesNothing(t *testing.T) {
	t.Parallel()
	m := mirrortest.NewMemory(prefix)
	r := newRig(t).withMirror(m)
	r.seed()
	res, err := r.run(syncer.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if ms := res.Summary.Mirror; ms == nil || ms.Uploaded != 3 || ms.Deleted != 0 {
		t.Errorf("dry run mirror = %+v, want 3 uploads", ms)
	}
	if n := len(m.Objects()); n != 0 {
		t.Errorf("dry run stored %d objects", n)
	}
}

func failedNames(fs []policy.Failure) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.PolicyName)
	}
	return out
}

func TestMirror_SkippedFileKeepsItsObject_StillConverged(t *testing.T) {
	t.Parallel()
	r, m := syncedMirroredRig(t)
	r.repo.Write("a/가.md", "") // empty: skipped, its entry and object kept
	r.repo.Commit("empty 가")
	res, err := r.run(syncer.Options{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	read := func(k string) []byte { b, _, _ := m.ReadRaw(t, k); return b }
	if got := mustMirrored(t, m, read)["가"]; got.Content != "# 가\n" || got.SHA != r.policies()["가"].SHA {
		t.Errorf("가's object %+v, want the registry's version kept", got)
	}
	if ms := res.Summary.Mirror; ms == nil || ms.Converged == "" || ms.Uploaded != 0 {
		t.Errorf("mirror %+v: want converged, nothing uploaded", ms)
	}
	if res := r.mustRun(); res.Summary.Mode == "full" {
		t.Errorf("the next run is full again: %s", res.Summary.ModeReason)
	}
}
