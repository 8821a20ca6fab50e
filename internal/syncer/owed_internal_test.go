package syncer

import (
	"fmt"
	"slices"
	"testing"

	"github.com/knue/syncjob/internal/policy"
)

// TestAppendNew_EachNameOnceInOrder: what was held first, then each new
// name once, in the order it came.
func TestAppendNew_EachNameOnceInOrder(t *testing.T) {
	t.Parallel()
	got := appendNew([]string{"b", "a"}, "a", "c", "b", "c", "d")
	if want := []string{"b", "a", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("appendNew = %q, want %q", got, want)
	}
	if got := appendNew(nil); got != nil {
		t.Errorf("appendNew(nil) = %q, want nil", got)
	}
}

// BenchmarkOwed_MassFailure is the record's list of what waits after a
// run in which 100,000 writes failed, beside 100,000 names to revisit (a
// run after a record not trusted whole lists the failed queue): a search of
// the list per name took 26 s (review).
func BenchmarkOwed_MassFailure(b *testing.B) {
	const n = 100_000
	revisit := make([]string, n)
	failures := make([]policy.Failure, n)
	for i := range n {
		revisit[i] = fmt.Sprintf("정책 %06d", i)
		failures[i] = policy.Failure{PolicyName: fmt.Sprintf("정책 %06d", i+n/2)}
	}
	rep := report{state: state{pendingRead: true, revisit: revisit}, failures: failures}
	for b.Loop() {
		if got := owed(rep, nil); len(got) != n+n/2 {
			b.Fatalf("owed %d names, want %d", len(got), n+n/2)
		}
	}
}
