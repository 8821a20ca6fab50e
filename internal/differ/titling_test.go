package differ_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/policy"
)

// TestTitling_TitlesInThePlannedItemsOwnArray: the titles a read delivers
// are written into the planned items' own array, not a second array of
// titled items beside them, so a first sync holds its items once
// (200,000 policies: 21 MB); the items dropped after it are let go.
func TestTitling_TitlesInThePlannedItemsOwnArray(t *testing.T) {
	t.Parallel()
	plan := policy.Plan{Items: []policy.Item{
		{Action: policy.ActAdd, PolicyName: "b", Path: "z/b.md", SHA: sha(1)},
		{Action: policy.ActAdd, PolicyName: "a", Path: "a.md", SHA: sha(2)},
		{Action: policy.ActUpdate, PolicyName: "c", Path: "c.md", SHA: sha(3), Old: &policy.Old{SHA: sha(9)}},
		{Action: policy.ActDelete, PolicyName: "d", Old: &policy.Old{Path: "d.md", SHA: sha(4)}},
	}}
	array := &plan.Items[0]
	ti := differ.NewTitling(plan, differ.Options{})
	ti.Put("c.md", policy.Content{Size: 0}) // empty: a skip
	ti.Put("a.md", policy.Content{Size: 5, Title: "A"})
	ti.Put("z/b.md", policy.Content{Size: 5, Title: "B"})
	ti.Put("nobody.md", policy.Content{Size: 5, Title: "X"}) // no item reads it
	got, failures, unread := ti.Done(plan, nil, nil)
	if len(got.Items) == 0 || &got.Items[0] != array {
		t.Fatalf("the titled items are a second array beside the planned ones")
	}
	var names []string
	for _, it := range got.Items {
		names = append(names, it.PolicyName+"="+it.Title)
	}
	if want := "b=B a=A d="; strings.Join(names, " ") != want {
		t.Errorf("items %v, want %s", names, want)
	}
	if rest := plan.Items[len(got.Items):]; !cmp.Equal(rest[0], policy.Item{}) {
		t.Errorf("a dropped item is still held past the titled ones: %+v", rest[0])
	}
	if len(got.Skipped) != 1 || got.Skipped[0].PolicyName != "c" || got.Skipped[0].Reason != differ.ReasonEmpty {
		t.Errorf("skipped = %+v", got.Skipped)
	}
	if len(failures) != 0 || len(unread) != 0 {
		t.Errorf("every file read: failures %+v, unread %+v", failures, unread)
	}
}

// TestTitling_UnreadAreTheFailedItemsAsPlanned: what a run keeps of its
// plan as planned while it applies is the items whose read failed, as
// planned (no title), not every planned item (moved from syncer's
// TestUnreadItems_OnlyTheItemsWhoseReadFailed with its assertions).
func TestTitling_UnreadAreTheFailedItemsAsPlanned(t *testing.T) {
	t.Parallel()
	items := []policy.Item{
		{Action: policy.ActAdd, PolicyName: "a", Path: "a.md", SHA: "1"},
		{Action: policy.ActUpdate, PolicyName: "b", Path: "b.md", SHA: "2", Old: &policy.Old{SHA: "0"}},
		{Action: policy.ActDelete, PolicyName: "c", Old: &policy.Old{Path: "c.md", SHA: "3"}},
	}
	planned := append([]policy.Item(nil), items...)
	ti := differ.NewTitling(policy.Plan{Items: items}, differ.Options{})
	ti.Put("a.md", policy.Content{Size: 3, Title: "A"})
	_, failures, unread := ti.Done(policy.Plan{Items: items}, map[string]error{"b.md": errors.New("boom")}, nil)
	if diff := cmp.Diff([]policy.Item{planned[1]}, unread); diff != "" {
		t.Errorf("unread items (-want +got):\n%s", diff)
	}
	if len(failures) != 1 || failures[0].PolicyName != "b" || failures[0].Error != "read content: boom" {
		t.Errorf("failures = %+v", failures)
	}
	items = append([]policy.Item(nil), planned...)
	ti = differ.NewTitling(policy.Plan{Items: items}, differ.Options{})
	ti.Put("a.md", policy.Content{Size: 3, Title: "A"})
	ti.Put("b.md", policy.Content{Size: 3, Title: "B"})
	if _, _, unread := ti.Done(policy.Plan{Items: items}, nil, nil); len(unread) != 0 {
		t.Errorf("no failures: %d items kept, want none", len(unread))
	}
}
