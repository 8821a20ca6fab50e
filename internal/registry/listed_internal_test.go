package registry

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/policy"
)

// fitEveryBudget is fitMetadata encoding at every budget, as it did before
// it passed over the budgets that cannot fit.
func fitEveryBudget(build func(budget int) any, want int) json.RawMessage {
	for budget := want; budget > 0; budget = budget * 3 / 4 {
		if b := MustJSON(build(budget)); len(b) <= policy.MaxMetadataBytes {
			return b
		}
	}
	return MustJSON(build(0))
}

func TestFitMetadata_SameAsEveryBudget_FewEncodings(t *testing.T) {
	t.Parallel()
	texts := []string{"", "cloudflare: 502", strings.Repeat("x", 1000), strings.Repeat("x", 1030),
		strings.Repeat("\xff", 900), strings.Repeat("\x80", 3000), "a" + strings.Repeat("\xe2\x82", 700)}
	for _, n := range []int{100, 146, 147, 150, 160, 500, 2000} {
		texts = append(texts, strings.Repeat("오류 ", n), strings.Repeat("\"\\<", n))
	}
	for _, msg := range texts {
		for _, reason := range []string{"3 failed attempts", msg + msg} {
			q := policy.QueueEntry{PolicyName: "규정", SHA: strings.Repeat("a", 40), Operation: "update", RetryCount: 2, CreatedAt: "2024-01-01T00:00:00Z", ErrorMessage: &msg}
			if got, want := queueMetadataOf(q), fitEveryBudget(queueMetadataAt(q), len(msg)); !bytes.Equal(got, want) {
				t.Errorf("queue metadata of a %d-byte message:\n got %s\nwant %s", len(msg), got, want)
			}
			d := policy.DeadLetter{QueueEntry: q, DeadAt: "2024-01-02T00:00:00Z", Reason: reason}
			if got, want := deadLetterMetadataOf(d), fitEveryBudget(deadLetterMetadataAt(d), 2*max(len(reason), len(msg))); !bytes.Equal(got, want) {
				t.Errorf("dead-letter metadata of a %d-byte message, %d-byte reason:\n got %s\nwant %s", len(msg), len(reason), got, want)
			}
		}
	}
	msg := strings.Repeat("오류 ", 2000) // 14 KB
	q := policy.QueueEntry{SHA: strings.Repeat("a", 40), ErrorMessage: &msg}
	encodings := 0
	build := queueMetadataAt(q)
	fitMetadata(func(budget int) any { encodings++; return build(budget) }, msg, 1)
	if encodings > 2 {
		t.Errorf("a 14 KB message was encoded %d times to fit, want at most 2", encodings)
	}
}
