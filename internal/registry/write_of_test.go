package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/policy"
)

// TestPutPolicyOf_EntryMadeWhenThePairIs: a put made with PutPolicyOf or
// PutQueueOf holds the function, not the entry: the entry is made each
// time the store makes the pair, and gives what PutPolicy and PutQueue
// would.
func TestPutPolicyOf_EntryMadeWhenThePairIs(t *testing.T) {
	t.Parallel()
	e := policy.Entry{PolicyName: "학칙", Title: "학칙", Status: policy.StatusActive, SHA: "abc", Path: "규정/학칙.md"}
	q := policy.QueueEntry{PolicyName: "학칙", SHA: "abc", Operation: policy.OpAdd}
	entries, queued := 0, 0
	wp := PutPolicyOf("학칙", func() policy.Entry { entries++; return e })
	wq := PutQueueOf("학칙", func() policy.QueueEntry { queued++; return q })
	if entries != 0 || queued != 0 || wp.Key() != "policy:학칙" || wq.Key() != "queue:학칙" || wp.IsDelete() || wq.IsDelete() {
		t.Fatalf("made %d entries and %d queue entries before any pair; keys %q %q", entries, queued, wp.Key(), wq.Key())
	}
	e.Title = "학칙 (개정)" // what the pair carries is the entry as it is when the pair is made
	if diff := cmp.Diff(PolicyPair(e), wp.pair()); diff != "" {
		t.Errorf("policy pair (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(QueuePair(q), wq.pair()); diff != "" {
		t.Errorf("queue pair (-want +got):\n%s", diff)
	}
	wp.pair()
	if entries != 2 || queued != 1 {
		t.Errorf("entries made %d and %d times, want once a pair (2 and 1)", entries, queued)
	}
}

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
