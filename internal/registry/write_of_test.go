package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/policy"
)

// TestSplitWrites_PutsAloneAreNotCopied: a batch of puts alone goes to the
// store as it is, not copied; a mixed one is split in order.
func TestSplitWrites_PutsAloneAreNotCopied(t *testing.T) {
	t.Parallel()
	puts := []Write{PutQueue(policy.QueueEntry{PolicyName: "a"}), PutQueue(policy.QueueEntry{PolicyName: "b"})}
	got, dels := splitWrites(puts)
	if len(got) != 2 || &got[0] != &puts[0] || dels != nil {
		t.Errorf("puts alone: %d puts (copied: %v), deletes %v; want the batch itself", len(got), len(got) > 0 && &got[0] != &puts[0], dels)
	}
	mixed := []Write{DeletePolicy("a"), PutQueue(policy.QueueEntry{PolicyName: "b"}), DeleteQueue("c"), PutQueue(policy.QueueEntry{PolicyName: "d"})}
	got, dels = splitWrites(mixed)
	var keys []string
	for _, w := range got {
		keys = append(keys, w.Key())
	}
	if diff := cmp.Diff([]string{"queue:b", "queue:d"}, keys); diff != "" {
		t.Errorf("puts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"policy:a", "queue:c"}, dels); diff != "" {
		t.Errorf("deletes (-want +got):\n%s", diff)
	}
}
