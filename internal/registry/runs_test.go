package registry_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/registrytest"
)

func TestRunIndex_NewestFirst_FromListingWithoutValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := registrytest.NewClock(registrytest.Epoch)
	store := registrytest.NewFaulty(registry.NewMemory(clock.Now))
	reg := registry.New(store)
	starts := []time.Time{registrytest.Epoch, registrytest.Epoch.Add(time.Hour), registrytest.Epoch.Add(2 * time.Hour)}
	for i, at := range starts {
		s := policy.RunSummary{RunID: string(rune('a' + i)), Status: []string{"success", "failed", "partial"}[i], BillableWrites: int64(10 * (i + 1))}
		if err := reg.RecordRun(ctx, s, at, ""); err != nil {
			t.Fatal(err)
		}
	}
	store.ListKeysOnly(true) // as Cloudflare lists: keys and metadata
	gets := store.Calls(registrytest.Get)
	refs, err := reg.RunIndex(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		At     time.Time
		Status string
		Writes int64
	}
	var got []row
	for _, r := range refs {
		got = append(got, row{r.At, r.Status, r.BillableWrites})
	}
	want := []row{{starts[2], "partial", 30}, {starts[1], "failed", 20}, {starts[0], "success", 10}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("index (-want +got):\n%s", diff)
	}
	if n := store.Calls(registrytest.Get) - gets; n != 0 {
		t.Errorf("%d values read, want 0: the metadata says it all", n)
	}
}
