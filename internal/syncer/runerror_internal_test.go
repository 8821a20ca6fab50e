package syncer

import (
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/policy"
)

// A run whose reads went unverified and that also left changes waiting or
// versions held back says both. Review: only the failures case said the
// reads were unverified.
func TestRunError_UnverifiedNotDroppedBesideWaitingOrHeldBack(t *testing.T) {
	t.Parallel()
	why := "reads not waited for (x)"
	for name, sum := range map[string]policy.RunSummary{
		"waiting":   {Status: policy.RunPartial, Waiting: 2, Unverified: why},
		"held back": {Status: policy.RunPartial, HeldBack: []policy.Skip{{PolicyName: "가"}}, Unverified: why},
	} {
		if err := runError(sum, nil); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: %v; want it to name the unverified reads too", name, err)
		}
	}
}
