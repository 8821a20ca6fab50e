package registry_test

import (
	"testing"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// policy.KeyFits decides which names are written without the registry; its
// MaxNameBytes must leave room for the longest prefix of the key schema.
func TestKeys_LongestPolicyKeyFitsTheNameLimit(t *testing.T) {
	t.Parallel()
	longest := max(len(registry.PolicyPrefix), len(registry.QueuePrefix), len(registry.DeadLetterPrefix))
	if policy.MaxNameBytes+longest != policy.MaxKeyBytes {
		t.Errorf("MaxNameBytes %d + longest prefix %d != MaxKeyBytes %d", policy.MaxNameBytes, longest, policy.MaxKeyBytes)
	}
}
