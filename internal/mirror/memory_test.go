package mirror_test

import (
	"context"
	"errors"
	"testing"

	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/mirror/mirrortest"
)

func TestMemory_InjectedFailures_PerKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := mirrortest.NewMemory(mirror.DefaultPrefix)
	a, _ := mirror.Render(mirror.DefaultPrefix, mirror.Doc{PolicyName: "a"})
	b, _ := mirror.Render(mirror.DefaultPrefix, mirror.Doc{PolicyName: "b"})
	m.FailPut(a.Key, mirror.ErrUnavailable)
	if _, err := m.Put(ctx, a); !errors.Is(err, mirror.ErrUnavailable) {
		t.Fatalf("put: %v", err)
	}
	if _, err := m.Put(ctx, b); err != nil {
		t.Fatal(err)
	}
	m.FailPut(a.Key, nil)
	if _, err := m.Put(ctx, a); err != nil {
		t.Fatal(err)
	}
	m.FailDelete(b.Key, mirror.ErrAccessDenied)
	perKey, err := m.Delete(ctx, []string{a.Key, b.Key})
	if err != nil || len(perKey) != 1 || !errors.Is(perKey[b.Key], mirror.ErrAccessDenied) {
		t.Fatalf("delete: %v, %v", err, perKey)
	}
	if got := m.Objects(); len(got) != 1 || got[b.Key].Key != b.Key {
		t.Fatalf("objects %v", got)
	}
}
