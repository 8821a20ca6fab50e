package syncer

import "testing"

// TestBatchesInFlight_BoundedByWritesHeld: small batches go Concurrency at
// a time; batches of thousands go only as many as hold 20,000 writes, and
// one at least.
func TestBatchesInFlight_BoundedByWritesHeld(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ batch, concurrency, want int }{
		{50, 16, 16}, {50, 32, 32}, {1000, 32, 20}, {5000, 16, 4}, {10000, 16, 2}, {10000, 1, 1}, {7000, 16, 2},
	} {
		o := Options{BatchSize: tc.batch, Concurrency: tc.concurrency}
		if got := o.batchesInFlight(); got != tc.want {
			t.Errorf("BatchSize %d, Concurrency %d: %d in flight, want %d", tc.batch, tc.concurrency, got, tc.want)
		}
	}
}
