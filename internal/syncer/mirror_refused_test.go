package syncer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/mirror/mirrortest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/syncer"
)

// halfEach is a streaming Source that reads the first half of the files it
// is asked for (handing each to the mirror's uploader), then nothing more
// until its context ends: a read the run's deadline cuts.
type halfEach struct {
	syncer.Source
	inner syncer.TitleStreamer
}

func (h halfEach) TitlesEach(ctx context.Context, commit string, files []policy.File, maxSize int64, each func(string, []byte), put func(string, policy.Content)) (map[string]error, error) {
	failed, err := h.inner.TitlesEach(ctx, commit, files[:len(files)/2], maxSize, each, put)
	if err != nil {
		return failed, err
	}
	<-ctx.Done()
	return failed, ctx.Err()
}

// TestMirror_AllowExactlyN_DeadlineCut_RefusedRunLeavesTheMirror: an
// operator reviews a plan deleting 11 policies and lets exactly that
// through (--allow-mass-delete=11). The run's read is cut by its deadline:
// the unreached update takes the plan's deletes with it (LeaveUnreached),
// so the guard refuses the plan (0 deletes, not 11). The refused run
// leaves the mirror as it was: the titles step uploads nothing when the
// guard could still refuse. (An adversarial helper found it had uploaded
// the update it reached: the mirror served a version the registry did not
// publish.)
func TestMirror_AllowExactlyN_DeadlineCut_RefusedRunLeavesTheMirror(t *testing.T) {
	t.Parallel()
	m := mirrortest.NewMemory(prefix)
	r := newRig(t).withMirror(m)
	r.seed()
	for i := range 12 {
		r.repo.Write(fmt.Sprintf("x/p%02d.md", i), fmt.Sprintf("# p%02d\n", i))
	}
	r.repo.Commit("more")
	r.mustRun()
	for i := range 11 {
		r.repo.Remove(fmt.Sprintf("x/p%02d.md", i))
	}
	r.repo.Write("a/가.md", "# 가\n\n둘째 판\n")
	r.repo.Write("a/나.md", "# 나\n\n둘째 판\n")
	r.repo.Commit("delete 11, edit two")
	before := r.policies()["가"].SHA
	src := r.s.Source
	r.s.Source = halfEach{Source: src, inner: src.(syncer.TitleStreamer)}
	ctx, cancel := context.WithTimeout(context.Background(), 900*time.Millisecond)
	defer cancel()
	res, err := r.s.Run(ctx, syncer.Options{AllowDeletes: 11, StopBefore: 50 * time.Millisecond})
	r.s.Source = src
	t.Logf("err %v; status %s; mirror %+v", err, res.Summary.Status, res.Summary.Mirror)
	if !errors.Is(err, differ.ErrRefused) {
		t.Fatalf("setup: the cut run was not refused: %v", err)
	}
	b, _, _ := m.ReadRaw(t, mirror.Key(prefix, "가"))
	doc, _, _ := mirror.ParseFrontMatter(b)
	if reg := r.policies()["가"].SHA; reg == before && doc.SHA != reg {
		t.Errorf("the refused run changed the mirror: 가's object at %s, the registry publishes %s", doc.SHA, reg)
	}
}
