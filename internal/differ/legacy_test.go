package differ_test

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/policy"
)

// A full run's listing is split without a copy: current is the listed map,
// the v1 entries taken out of it.
func TestSplitV1_CurrentIsTheListingItself(t *testing.T) {
	t.Parallel()
	sha := "0123456789abcdef0123456789abcdef01234567"
	all := map[string]policy.Entry{
		"학칙":   {PolicyName: "학칙", SHA: sha, Path: "a/학칙.md"},
		"옛 규정": {Title: "옛 규정", Legacy: &policy.Legacy{FileNo: "7"}},
	}
	current, v1 := differ.SplitV1(all)
	if reflect.ValueOf(current).UnsafePointer() != reflect.ValueOf(all).UnsafePointer() {
		t.Error("current is a copy of the listing: the listing is held twice")
	}
	if diff := cmp.Diff(map[string]policy.Entry{"학칙": {PolicyName: "학칙", SHA: sha, Path: "a/학칙.md"}}, current); diff != "" {
		t.Errorf("current (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]policy.Entry{"옛 규정": {Title: "옛 규정", Legacy: &policy.Legacy{FileNo: "7"}}}, v1); diff != "" {
		t.Errorf("v1 (-want +got):\n%s", diff)
	}
	if current, v1 := differ.SplitV1(nil); current == nil || v1 == nil {
		t.Error("SplitV1(nil): want empty maps, not nil")
	}
}
