package scalebench

import "testing"

// The memory targets: 64 MiB at 50,000 policies, 96 at 200,000.
// Judged on the worst repetition: a median under the limit hid a run over
// it (50,000 at 10,000 a batch: 65 and 62 MiB medians on one day).
func TestRSSTarget_PerSize_WorstRepetition(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]int{1000: 64, 50_000: 64, 125_000: 80, 200_000: 96, 400_000: 96} {
		if got := rssLimitMiB(n); got != want {
			t.Errorf("rssLimitMiB(%d) = %d, want %d", n, got, want)
		}
	}
	s := &scaleSet{n: 50_000, reps: []scaleRep{
		{runFirst: {rssKiB: 61 << 10}},
		{runFirst: {rssKiB: 66 << 10}},
		{runFirst: {rssKiB: 99 << 10, killed: "over the cap"}},
	}}
	if got := s.worstRSSKiB(runFirst); got != 66<<10 {
		t.Errorf("worstRSSKiB = %d KiB, want %d (the worst finished repetition)", got, 66<<10)
	}
}
